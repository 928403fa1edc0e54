import Testing
import TokendCore
@testable import TokendServer
import TokendTestSupport

/// The daemon listens before it has read the stored sessions (a Secret Service may be slow, or
/// frozen), so a command can arrive while an account's first read is under way: right after a
/// start, or as the request that socket-activated the daemon. Each waits for that read.
@Suite(.timeLimit(.minutes(1))) struct FirstReadTests {
    /// An engine whose account `work` has a stored session not read yet, and the names to read.
    func adoptedUnread() async -> (ManualWorld, [String]) {
        let world = ManualWorld()
        await world.store(["work"])
        let unread = await world.engine.adopt(ManualWorld.configuration(["work"]))
        return (world, unread)
    }

    /// `refresh` refreshes the stored session once it is read, not "still being read; try again"
    /// (seen on CI with KWallet, whose first read outlasted the start).
    @Test func aRefreshWaitsForTheFirstRead() async throws {
        let (world, unread) = await adoptedUnread()
        async let refreshed = world.engine.commands.refresh(account: "work", timeout: 5)
        try await poll("the refresh waits") { await world.engine.waiters.count(account: "work") > 0 }
        await world.engine.keyring.restore(unread)
        let call = await world.provider.nextCall()
        #expect(call.refreshToken == "rt-work", "the stored session's refresh token is the one presented")
        call.answer(freshTokens("id-2"))
        #expect(try await refreshed.get() != nil)
        let served = await world.engine.commands.token(account: "work", kind: nil, minValid: 0, timeout: 1)
        #expect(try served.get().token == "id-2", "the refresh's answer is what the account holds")
    }

    /// `logout` revokes the stored session's refresh token: before, it forgot an account that held
    /// nothing yet, so nothing was revoked while the item was deleted.
    @Test func aLogoutWaitsForTheFirstReadAndRevokesWhatWasStored() async throws {
        let (world, unread) = await adoptedUnread()
        async let loggedOut = world.engine.commands.logout(account: "work")
        try await poll("the logout waits") { await world.engine.waiters.count(account: "work") > 0 }
        await world.engine.keyring.restore(unread)
        let outcome = try await loggedOut.get()
        #expect(outcome.revocation != nil, "the stored refresh token reached the provider's revocation")
        #expect(world.store.storedTokens(account: "work") == nil)
        #expect(await world.state("work") == "needs_login")
    }

    /// A read that outlasts the request's timeout ends it with the advice to try again (75).
    @Test func aRefreshAskedWhileTheReadOutlastsItsTimeoutIsTemporary() async throws {
        let (world, _) = await adoptedUnread()
        async let refreshed = world.engine.commands.refresh(account: "work", timeout: 5)
        try await poll("the refresh waits") { await world.engine.waiters.count(account: "work") > 0 }
        world.clock.advance(by: 5)
        guard case .failure(let error) = await refreshed else { Issue.record("expected a refusal"); return }
        #expect(error == Advice.notReadYet("work"))
        #expect(world.provider.callCount == 0)
    }
}
