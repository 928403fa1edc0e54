import Foundation
import Testing
import TokendCore
import TokendFleet
@testable import TokendServer
import TokendTestClock
import TokendTestSupport

/// A fleet follower (README, "A fleet"): the sessions the watch brings are served from memory at
/// once, whatever the local store is doing; the local copy follows, each account's newest.
@Suite struct FleetFollowerTests {
    /// A session another member wrote, valid for an hour.
    static func session(_ n: Int) -> TokenSet {
        TokenSet(refreshToken: "refresh-\(n)", idToken: "id-\(n)", idTokenExpiresAt: Date().addingTimeInterval(3600), issuedAt: Date())
    }

    @Test func aStalledLocalStoreHoldsBackNoSessionOfTheFleets() async throws {
        // The store's hang ends only when this clock moves: a keyring frozen until the test says.
        let storeClock = ManualClock()
        let store = InMemorySecretStore(timeout: 60, clock: storeClock, timers: storeClock)
        let fixture = try await EngineFixture.make(store: store)
        store.hang = true
        // As FleetMember.watched hands them over: one after another, each once the last was taken.
        let watch = Task {
            for n in 1...3 { await fixture.engine.followFleet("work", .put(Self.session(n))) }
        }
        try await poll("the follower serves the third session while its store is stalled") {
            let served = await fixture.engine.commands.token(account: "work", kind: nil, minValid: 60, timeout: 1)
            return (try? served.get().token) == "id-3"
        }
        await watch.value
        #expect(store.storedTokens(account: "work") == nil, "nothing reached the stalled store")

        // The store answers again: the first copy's write times out, and the copy written after it
        // is the account's newest session, not the ones the watch brought before.
        store.hang = false
        storeClock.advance(by: 61)
        try await poll("the local store gets the newest session") {
            store.storedTokens(account: "work")?.refreshToken == "refresh-3"
        }
        await fixture.shutdown()
    }
}
