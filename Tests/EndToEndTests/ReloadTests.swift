import Foundation
import Testing
import TokendCore
import TokendProtocol
import TokendTestSupport

/// Issue 45, item 5: `tokenctl reload` (the unit's `ExecReload=`) returns only once the daemon
/// has applied the file or refused it, so that the next command meets the new configuration.
/// The real tokend and tokenctl; no polling between the reload and the command after it.
@Suite struct ReloadTests {
    @Test func aReloadIsAppliedBeforeTokenctlReturns() async throws {
        try await withWorld { world in
            try await world.importNewUser()
            let hello = try await world.call(.hello)
            #expect(hello.capabilities?.contains("reload") == true)

            try world.writeConfig([world.firebaseAccount("work"), world.firebaseAccount("play")].joined(separator: "\n"))
            let reload = try await world.tokenctl(["reload"])
            #expect(reload.status == 0, "reload: \(reload.stderr)")
            #expect(reload.stdout == "tokend reloaded \(world.configPath): 2 accounts (play, work)\n")
            // At once: the reload has answered, so the account is there.
            let status = try await world.tokenctl(["status", "play"])
            #expect(status.status == 0, "status play: \(status.stderr)")
            #expect(status.stdout.contains("play"))
            #expect(try await world.tokenctl(["token", "work"]).status == 0)

            // A broken file: 78, one line naming the file, its line and key; the last good
            // configuration (both accounts) still serves.
            try world.writeConfig(world.firebaseAccount("work") + "\n[account.broken]\nprovider = \n")
            let refused = try await world.tokenctl(["reload"])
            #expect(refused.status == 78)
            #expect(refused.stdout.isEmpty)
            #expect(refused.stderr.hasPrefix("tokenctl: \(world.configPath):6"), "\(refused.stderr)")
            #expect(refused.stderr.contains("keeps serving its last good configuration"))
            #expect(refused.stderr.split(separator: "\n").count == 1)
            #expect(try await world.tokenctl(["token", "work"]).status == 0)
            #expect(try await world.tokenctl(["status", "play"]).status == 0, "the removal in the broken file was not applied")

            // Fixed again: the removal of `play` is applied before reload returns.
            try world.writeConfig(world.firebaseAccount("work"))
            #expect(try await world.tokenctl(["reload"]).stdout == "tokend reloaded \(world.configPath): 1 account (work)\n")
            #expect(try await world.tokenctl(["status", "play"]).status == 67)
        }
    }

    /// The op on the wire, as docs/protocol.md shows it: `config` and `configured` on success,
    /// `config_error` with the located problem on failure.
    @Test func theReloadOpAnswersWhatWasApplied() async throws {
        try await withWorld { world in
            let applied = try await world.call(.reload, id: .number(4))
            #expect(applied.ok && applied.id == .number(4))
            #expect(applied.config == world.configPath && applied.configured == ["work"])
            try world.writeConfig("[account.work]\nprovider = \n")
            let refused = try await world.call(.reload)
            #expect(refused.error?.code == .configError)
            #expect(refused.error?.message.hasPrefix("\(world.configPath):2") == true, "\(String(describing: refused.error))")
            // SIGHUP still reloads, without an answer to wait for.
            try world.writeConfig([world.firebaseAccount("work"), world.firebaseAccount("play")].joined(separator: "\n"))
            world.signalDaemon(SIGHUP)
            try await poll("SIGHUP adds play") { (try? await world.status("play")) != nil }
        }
    }
}
