import Foundation
import Testing
import TokendTestSupport

/// Issue 48, item 3: a `pass` key that needs its passphrase is a store that needs the user:
/// tokend never waits on a prompt, the account waits (exit 75, never needs_login) with steps in
/// the log, and once the user unlocks the key the stored session is served.
@Suite struct PassPassphraseTests {
    @Test func aKeyThatNeedsItsPassphraseWaitsForTheUser() async throws {
        let passphrase = "correct horse battery staple"
        try await withStore(.pass, passphrase: passphrase) { store in
            let pass = try #require(store.pass)
            try await store.startDaemon()
            let world = store.world
            try await world.importNewUser()  // encrypting needs only the public key
            world.stopDaemon()
            try await offPool { try pass.forgetPassphrase() }
            try await world.startDaemon(extraEnvironment: store.daemonEnvironment)
            try await poll("the account waits for the user") { try await world.status().state == "waiting_for_keyring" }
            let token = try await world.tokenctl(["token", "work"])
            #expect(token.status == 75, "\(token.stderr)")
            #expect(token.stderr.contains("passphrase"), "the steps say how to unlock: \(token.stderr)")
            try await poll("the log says the store needs the user") { world.daemonLog.contains("needs its passphrase") }
            #expect(!world.daemonLog.contains("needs_login"))
            try await offPool { try pass.unlock(passphrase) }
            try await poll("served once the key is unlocked") { try await world.status().state == "active" }
            #expect(try await world.tokenctl(["token", "work"]).status == 0)
        }
    }
}
