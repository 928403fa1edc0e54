import Testing
import TokendCore
import TokendKeyring
import TokendProtocol
@testable import TokendServer
import TokendTestSupport

/// The table the event loop serves from (`HeldTokens`) follows the engine's accounts through
/// every change: what it hands out is always what `token` would, and nothing the engine dropped.
@Suite(.timeLimit(.minutes(1))) struct HeldTokensTests {
    @Test func itHoldsWhatTheEngineServesAndNotAMomentLonger() async throws {
        let world = ManualWorld()
        var events = world.hub.subscribe(account: "work").makeAsyncIterator()
        #expect(world.engine.commands.heldToken(account: "work", kind: nil, minValid: 60) == nil, "nothing before the account is read")
        await world.start(["work"])
        let held = try #require(world.engine.commands.heldToken(account: "work", kind: nil, minValid: 60))
        #expect(held.token == "id-work" && held.kind == .id)
        #expect(world.engine.commands.heldToken(account: "work", kind: .access, minValid: 60) == nil, "no access token is held")
        #expect(world.engine.commands.heldToken(account: "work", kind: nil, minValid: 3601) == nil, "not valid that long: the engine decides")

        // The table is read with the clock's now, and promises nothing past the proactive refresh
        // at 3300 s (docs/architecture.md, "Promises"), though the token lives until 3600 s.
        world.clock.advance(by: 3299)
        #expect(world.engine.commands.heldToken(account: "work", kind: nil, minValid: 2) == nil)
        #expect(world.engine.commands.heldToken(account: "work", kind: nil, minValid: 1)?.token == "id-work")

        // The provider ends the session: gone from the table as the account says needs_login.
        world.clock.advance(by: 1)
        await world.provider.nextCall().answer(.needsLogin(RefreshFailure(code: "TOKEN_EXPIRED", message: "expired")))
        #expect(await events.next(.needsLogin) != nil)
        #expect(world.engine.commands.heldToken(account: "work", kind: nil, minValid: 0) == nil)
    }

    @Test func aLogoutClearsItBeforeItAnswers() async throws {
        let world = ManualWorld()
        await world.start(["work"])
        #expect(world.engine.commands.heldToken(account: "work", kind: nil, minValid: 60) != nil)
        _ = await world.engine.commands.logout(account: "work")
        #expect(world.engine.commands.heldToken(account: "work", kind: nil, minValid: 60) == nil)
    }

    @Test func aRemovedAccountIsGoneFromIt() async throws {
        let world = ManualWorld()
        await world.start(["work", "home"])
        await world.engine.apply(ManualWorld.configuration(["home"]))
        #expect(world.engine.commands.heldToken(account: "work", kind: nil, minValid: 60) == nil)
        #expect(world.engine.commands.heldToken(account: "home", kind: nil, minValid: 60)?.token == "id-home")
    }
}
