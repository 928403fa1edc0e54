import Foundation
import Testing
import TokendCore
import TokendProtocol
import TokendTestSupport

/// `[hooks]` and the default `needs_login` notification, with the real tokend running real
/// programs: a hook script that records what it was given, and a stub `notify-send` on PATH.
@Suite struct HookTests {
    /// An executable shell script in `directory`.
    static func script(_ directory: TemporaryDirectory, _ name: String, _ body: String) throws -> String {
        let path = directory.appending(name)
        try ("#!/bin/sh\n" + body + "\n").write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o755)
        return path
    }

    /// The file's complete lines: a line a script is still writing is not read half.
    static func lines(_ path: String) -> [String] {
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        return text.split(separator: "\n", omittingEmptySubsequences: false).dropLast().filter { !$0.isEmpty }.map(String.init)
    }

    @Test func hooksGetTheEventAndAccountButNoTokenAndNotificationsComeOncePerAccount() async throws {
        let directory = try TemporaryDirectory()
        defer { try? directory.remove() }
        let events = directory.appending("events")
        let notifications = directory.appending("notifications")
        let order = directory.appending("order")  // one file per event: different events may overlap
        let record = try Self.script(directory, "record", #"""
            echo "start $$" >> "\#(order)-$TOKEND_EVENT"
            { echo "argv=$*"; echo "event=$TOKEND_EVENT"; echo "account=$TOKEND_ACCOUNT"; env | grep -c '^TOKEND_TOKEN' ; } >> "\#(events)"
            env > "\#(directory.path)/env-$TOKEND_EVENT-$$"
            echo "hook says hi"
            sleep 0.2  # long enough for a second run of the event to overlap, were runs not serial
            echo "end $$" >> "\#(order)-$TOKEND_EVENT"
            """#)
        let stubs = directory.appending("bin")
        try FileManager.default.createDirectory(atPath: stubs, withIntermediateDirectories: true)
        _ = try Self.script(directory, "bin/notify-send", #"printf '%s|' "$@" >> "\#(notifications)"; echo >> "\#(notifications)""#)

        try await withWorld(accounts: [], startDaemon: false) { world in
            try world.writeConfig("""
                [hooks]
                imported = ["\(record)", "first arg", "$HOME"]
                needs_login = ["\(record)", "login"]
                refreshed = ["/bin/sh", "-c", "echo complaint >&2; exit 7"]

                \(world.firebaseAccount("work"))
                \(world.firebaseAccount("home"))
                """)
            try await world.startDaemon(extraEnvironment: [
                "DISPLAY": ":99", "PATH": stubs + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"),
            ])
            let session = try await world.importNewUser(into: "work")
            // The hook says hi after writing its record and its environment: both are whole then.
            try await poll("the hook's output in the log") { world.daemonLog.contains("hook says hi") }
            let imported = Self.lines(events)
            #expect(imported.contains("event=imported"), "\(imported)")
            #expect(imported.contains("argv=first arg $HOME"), "argv as written, no shell: \(imported)")
            #expect(imported.contains("account=work"))
            #expect(imported.contains("0"), "no TOKEND_TOKEN* variable")
            let environments = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasPrefix("env-") }
            for name in environments {
                let text = try String(contentsOfFile: directory.appending(name), encoding: .utf8)
                #expect(!text.contains(session.refreshToken) && !text.contains(session.idToken), "a hook never sees a token")
            }

            // needs_login three times: twice for work (one notification within the hour), once for home.
            world.fake.faults.inject(.firebaseError("TOKEN_EXPIRED"), count: 1000)
            #expect(try await world.tokenctl(["refresh", "work"]).status == 77)
            _ = try await world.tokenctl(["import", "work"], stdin: world.fake.createUser().refreshToken + "\n")
            _ = try await world.tokenctl(["import", "home"], stdin: world.fake.createUser().refreshToken + "\n")
            // Notifications run before the hook of the same event: three hook runs mean every
            // notification that was going to be sent has been.
            try await poll("three needs_login hooks") { Self.lines(events).filter { $0 == "event=needs_login" }.count == 3 }
            // One at a time per event: each run's start is followed by its own end.
            let runs = Self.lines(order + "-needs_login")
            #expect(runs.count >= 5, "\(runs)")
            for (index, line) in runs.enumerated() {
                let expected = index % 2 == 0 ? "start " : "end " + runs[index - 1].dropFirst("start ".count)
                #expect(index % 2 == 0 ? line.hasPrefix(expected) : line == expected, "\(runs)")
            }
            // A failing hook is logged with its output.
            try await poll("the failing hook logged") {
                world.daemonLog.contains("hook failed with exit status 7") && world.daemonLog.contains("complaint")
            }
            let sent = Self.lines(notifications)
            #expect(sent.count == 2, "\(sent)")
            #expect(sent.contains { $0.contains("work needs you to sign in again: tokenctl login work") })
            #expect(sent.contains { $0.contains("home needs you to sign in again: tokenctl login home") })
            #expect(!world.daemonLog.contains(session.refreshToken))
        }
    }

    @Test func aHangingHookIsKilledAfterItsTimeoutAndNeverHoldsUpServing() async throws {
        try await Self.withAHangingHook(on: ["imported", "refreshed"]) { world, hook in
            // While it hangs, tokens are served and refreshes happen.
            #expect(try await world.tokenctl(["token", "work"]).status == 0)
            #expect(try await world.tokenctl(["refresh", "work"]).status == 0)
            try await poll(timeout: 60, "the hook killed after its timeout") { world.daemonLog.contains("took longer than 10 s and was killed") }
            // Killed with its process group; reaped (the shell) or re-parented and reaped (sleep).
            try await Self.expectGone(hook)
        }
    }

    /// A hook still running when the daemon stops is killed with its process group: no hook
    /// outlives the daemon, under systemd (whose cgroup would catch it) or not.
    @Test func aRunningHookDiesWithTheDaemon() async throws {
        try await Self.withAHangingHook(on: ["imported"]) { world, hook in
            #expect(world.stopDaemon() == 0, "tokend stops cleanly")
            try await Self.expectGone(hook)
        }
    }

    /// A hook that starts a background `sleep 300` and waits for it, adding both pids to a file as
    /// one line per run. Appended, never rewritten: runs of other events (or a later run of the
    /// same one) start while the test reads the file, and `>` would empty it for a moment.
    struct HangingHook {
        let directory: TemporaryDirectory
        let pids: String
    }

    /// A world whose hook for `events` hangs, with a session imported and the hook running, for
    /// the length of `body`; the world and the hook's directory go however `body` ends.
    static func withAHangingHook(on events: [String], _ body: (DaemonHarness, HangingHook) async throws -> Void) async throws {
        let directory = try TemporaryDirectory()
        try await withTearDown(directory, tearDown: { try? $0.remove() }) { directory in
            let pids = directory.appending("pids")
            let hang = try script(directory, "hang", #"""
                sleep 300 &
                echo "$$ $!" >> "\#(pids)"
                wait
                """#)
            try await withWorld(startDaemon: false) { world in
                let hooks = events.map { "\($0) = [\"\(hang)\"]\n" }.joined()
                try world.writeConfig("[hooks]\n" + hooks + "\n" + world.firebaseAccount("work"))
                try await world.startDaemon()
                try await world.importNewUser()
                try await poll("the hook started") { !lines(pids).isEmpty }
                try await body(world, HangingHook(directory: directory, pids: pids))
            }
        }
    }

    /// Both processes of every run started so far end (the shell and its background child).
    static func expectGone(_ hook: HangingHook) async throws {
        let runs = lines(hook.pids).map { $0.split(separator: " ").compactMap { Int32($0) } }
        #expect(!runs.isEmpty && runs.allSatisfy { $0.count == 2 }, "\(runs)")
        for pid in runs.joined() {
            try await poll("process \(pid) gone") { kill(pid, 0) != 0 || isZombieOrGone(pid) }
        }
    }

    static func isZombieOrGone(_ pid: Int32) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else { return true }
        return stat.split(separator: ")").last?.trimmingCharacters(in: .whitespaces).hasPrefix("Z") ?? true
    }

    @Test func aBrokenHooksTableIsAConfigurationError() async throws {
        try await withWorld(startDaemon: false) { world in
            try world.writeConfig("[hooks]\nrefreshd = [\"/bin/true\"]\n\n" + world.firebaseAccount("work"))
            try await world.startDaemon()
            let run = try await world.tokenctl(["token", "work"])
            #expect(run.status == 78)
            #expect(run.stderr.contains("hooks.refreshd"), "\(run.stderr)")
        }
    }
}
