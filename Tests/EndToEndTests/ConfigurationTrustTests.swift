import Foundation
import Testing
import TokendTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// The configuration names programs tokend runs and endpoints that get refresh tokens: a file
/// others could have written is refused (docs/security.md, "The configuration file"), and a
/// refused file is never mistaken for an empty one.
@Suite struct ConfigurationTrustTests {
    /// Before: `tokenctl list` and `status` exited 0 with "No accounts are configured."
    @Test func aRefusedConfigurationAnswersItsErrorToEveryRequest() async throws {
        try await withWorld(accounts: [], startDaemon: false) { world in
            try world.writeConfig("[account.work]\nprovider = \"firebase\"\napi_key = \n")
            try await world.startDaemon()
            for command in [["list"], ["status"], ["status", "work"], ["token", "work"], ["refresh", "work"], ["watch"], ["logout", "work"]] {
                let run = try await world.tokenctl(command)
                #expect(run.status == 78, "\(command): exit \(run.status), \(run.stdout) \(run.stderr)")
                #expect(run.stderr.contains(world.configPath + ":3"), "\(command) names the file and line: \(run.stderr)")
                #expect(!run.stdout.contains("No accounts"), "\(command): \(run.stdout)")
            }
        }
    }

    /// Before: a group-writable file, or one in a group-writable directory, was loaded and its
    /// hooks would have run.
    @Test(arguments: [(file: mode_t(0o664), directory: mode_t(0o700)), (file: 0o646, directory: 0o700), (file: 0o600, directory: 0o770)])
    func aConfigurationOthersCanWriteIsRefused(_ modes: (file: mode_t, directory: mode_t)) async throws {
        try await withWorld(startDaemon: false) { world in
            let directory = URL(fileURLWithPath: world.configPath).deletingLastPathComponent().path
            try world.writeConfig(world.firebaseAccount("work") + "\n[hooks]\nrefreshed = [\"/bin/true\"]\n")
            #expect(chmod(world.configPath, modes.file) == 0 && chmod(directory, modes.directory) == 0)
            try await world.startDaemon()
            let run = try await world.tokenctl(["status"])
            #expect(run.status == 78, "exit \(run.status): \(run.stdout) \(run.stderr)")
            #expect(run.stderr.contains("chmod go-w"), "the fix is named: \(run.stderr)")
            let token = try await world.tokenctl(["token", "work"])
            #expect(token.status == 78, "\(token.stderr)")
        }
    }

    @Test func aConfigurationOwnedByAnotherUserIsRefused() async throws {
        try await withWorld(startDaemon: false) { world in
            try world.writeConfig(world.firebaseAccount("work"))
            #expect(chown(world.configPath, 65534, 65534) == 0)
            try await world.startDaemon()
            let run = try await world.tokenctl(["status"])
            #expect(run.status == 78, "exit \(run.status): \(run.stdout) \(run.stderr)")
            #expect(run.stderr.contains("belongs to another user"), "\(run.stderr)")
        }
    }

    /// A client secret others can read is loaded, with a line in the log saying how to fix it.
    @Test func aClientSecretOthersCanReadIsWarnedAbout() async throws {
        try await withWorld(accounts: [], startDaemon: false) { world in
            let text = "[account.corp]\nprovider = \"oidc\"\nissuer = \"https://login.example.com\"\nclient_id = \"c\"\nclient_secret = \"s\"\n"
            try world.writeConfig(text)
            #expect(chmod(world.configPath, 0o644) == 0)
            try await world.startDaemon()
            #expect(try await world.tokenctl(["status"]).status == 0)
            #expect(world.daemonLog.contains("client_secret is in a file other users can read; run: chmod go-r"), "\(world.daemonLog)")
        }
    }
}
