import Foundation
import Testing
import TokendCore
import TokendProtocol
import TokendTestSupport

/// Issue 8, item 5, in the Swift end-to-end suite: many accounts, and a keyring that is frozen
/// when tokend starts. The socket answers before the keyring does, every account says
/// `waiting_for_keyring`, and every stored session comes back once the keyring answers. (Locked
/// at start, with one account: `KeyringMoodTests.lockedAtStartIsNotEmpty`. With 20, the test
/// keyring's unlock races a bus-activated locked keyring for the Secret Service name while
/// tokend polls, so that case is left to the one-account test.)
@Suite struct KeyringAtStartTests {
    static let accounts = (1...20).map { "acct\($0)" }

    /// A world with `accounts` imported, stored, and the daemon stopped.
    func storedWorld() async throws -> (DaemonHarness, [String: String]) {
        let world = try await DaemonHarness.start(accounts: Self.accounts)
        var stored: [String: String] = [:]
        for account in Self.accounts {
            try await world.importNewUser(into: account)
            stored[account] = try #require(try await world.storedSession(account)?.refreshToken)
        }
        world.stopDaemon()
        return (world, stored)
    }

    func states(_ world: DaemonHarness) async throws -> [String: String] {
        let reply = try await world.call(.list(StatusArgs()))
        return Dictionary(uniqueKeysWithValues: (reply.accounts ?? []).map { ($0.name, $0.state) })
    }

    func expectAllRestored(_ world: DaemonHarness, _ stored: [String: String]) async throws {
        try await poll(timeout: 60, "every stored session loads once the keyring answers") {
            try await states(world).values.allSatisfy { $0 == "active" }
        }
        for account in Self.accounts.prefix(3) {
            #expect(try await world.tokenctl(["token", account]).status == 0)
        }
        for account in Self.accounts {
            #expect(try await world.storedSession(account)?.refreshToken == stored[account], "\(account)'s item is untouched")
        }
    }

    /// gnome-keyring frozen (SIGSTOP): not one keyring call can finish. The daemon still answers
    /// `hello` and `list`, every account waiting; after the thaw all 20 sessions load.
    @Test func aFrozenKeyringAtStartDelaysNothingButTheSessions() async throws {
        let (world, stored) = try await storedWorld()
        try await withTearDown(world, tearDown: { await $0.shutdown() }) { world in
            try world.keyring.pauseKeyring()
            var thawed = false
            defer { if !thawed { try? world.keyring.resumeKeyring() } }
            try await world.startDaemon()  // returns once `hello` is answered
            let waiting = try await states(world)
            #expect(waiting.count == Self.accounts.count)
            #expect(waiting.values.allSatisfy { $0 == "waiting_for_keyring" }, "\(waiting)")
            try world.keyring.resumeKeyring()
            thawed = true
            try await expectAllRestored(world, stored)
        }
    }
}
