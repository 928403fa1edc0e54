import Foundation
import Testing
import TokendTestSupport

/// A consumer's socket that systemd passes (README, "Consumers": a `.socket` unit with
/// `FileDescriptorName=consumer-NAME` beside `tokend.socket`), with the real tokend started by
/// Debian's `systemd-socket-activate`, which binds, names and passes sockets as systemd does and
/// execs tokend on the first connection. scripts/test-systemd does the same with real units.
@Suite struct ConsumerSocketActivationTests {
    static let activate = "/usr/bin/systemd-socket-activate"

    /// The launcher that passes `main` as `tokend` and `consumer` as `consumer-agent`. The
    /// environment is passed by name (`-E`): systemd-socket-activate hands on nothing else. It
    /// makes its sockets 0644 whatever the umask, so a shell it execs first makes them 0600 (as
    /// `SocketMode=0600` does) and then execs tokend, keeping the pid that `LISTEN_PID` names.
    static func launcher(_ world: DaemonHarness, main: String, consumer: String) -> [String] {
        [activate, "-l", main, "-l", consumer, "--fdname=tokend:consumer-agent"]
            + world.environment.keys.sorted().flatMap { ["-E", $0] }
            + ["/bin/sh", "-c", "chmod 0600 -- \"$1\" \"$2\" && shift 2 && exec \"$@\"", "sh", main, consumer]
    }

    @Test func aPassedConsumerSocketIsServedWithItsPolicyAndLeftToSystemdAtStop() async throws {
        try await withWorld(accounts: ["work", "other"], startDaemon: false) { world in
            let run = world.keyring.root.appendingPathComponent("run")
            // README's recipe: systemd's socket at %t/tokend/agent.sock; the `socket` key's own
            // path (a bare name: %t/tokend/consumers/agent.sock) is for tokend without systemd.
            let passed = run.appendingPathComponent("tokend/agent.sock").path
            let configured = run.appendingPathComponent("tokend/consumers/agent.sock").path
            // What DirectoryMode=0700 makes before systemd binds.
            try FileManager.default.createDirectory(atPath: run.appendingPathComponent("tokend").path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            let consumer = """

                [consumer.agent]
                socket = "agent.sock"
                accounts = ["work"]
                """
            try world.writeConfig([world.firebaseAccount("work"), world.firebaseAccount("other"), consumer].joined(separator: "\n"))
            try await world.startDaemon(launcher: Self.launcher(world, main: world.socketPath, consumer: passed))
            _ = try await world.importNewUser(into: "work")
            _ = try await world.importNewUser(into: "other")

            // Its account: the main socket's token.
            let mainToken = try await world.tokenctl(["token", "work"])
            try #require(mainToken.status == 0, "\(mainToken.stderr)")
            let token = try await ConsumerSocketTests.tokenctl(world, socket: passed, ["token", "work"])
            #expect(token.status == 0 && token.stdout == mainToken.stdout, "\(token.stderr)\n\(world.daemonLog)")
            // Another account: an unknown name's answer, word for word (67).
            let hidden = try await ConsumerSocketTests.tokenctl(world, socket: passed, ["token", "other"])
            let unknown = try await ConsumerSocketTests.tokenctl(world, socket: passed, ["token", "no-such"])
            #expect(hidden.status == 67 && unknown.status == 67, "\(hidden.stderr)")
            #expect(hidden.stderr.replacingOccurrences(of: "other", with: "no-such") == unknown.stderr && hidden.stdout.isEmpty)
            // An operation outside the default ["token", "status"]: forbidden (78), one line.
            let refused = try await ConsumerSocketTests.tokenctl(world, socket: passed, ["refresh", "work"])
            #expect(refused.status == 78 && refused.stderr.contains("consumer \"agent\" may not use"), "\(refused.stderr)")
            // Served as passed: tokend made no socket of its own at the configured path.
            #expect(!FileManager.default.fileExists(atPath: configured))

            // At stop the sockets stay: they are systemd's, which removes them (RemoveOnStop=).
            try #require(world.stopDaemon() == 0, "\(world.daemonLog)")
            var info = stat()
            #expect(lstat(passed, &info) == 0 && info.st_mode & S_IFMT == S_IFSOCK, "the consumer's passed socket is still there")
            #expect(lstat(world.socketPath, &info) == 0 && info.st_mode & S_IFMT == S_IFSOCK, "the main passed socket is still there")
        }
    }
}
