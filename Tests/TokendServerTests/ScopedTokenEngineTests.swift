import Foundation
import Logging
import Testing
import TokendCore
import TokendKeyring
import TokendProtocol
import TokendProviders
@testable import TokendServer
import TokendFakes
import TokendSystem
import TokendTestSupport

/// The engine's scoped tokens against the fake OIDC provider over real HTTP, with an in-memory
/// keyring: the refusals that need no daemon, and single flight under rotation.
@Suite(.timeLimit(.minutes(1))) struct ScopedTokenEngineTests {
    /// An engine with the OIDC account `corp` on `fake`, holding `session`.
    func withEngine(
        _ session: TokenSet, clock: any WallClock = SystemWallClock(), timers: (any TimerSource)? = nil, _ body: (FakeOIDC, AccountEngine, InMemorySecretStore) async throws -> Void
    ) async throws {
        let fake = try await FakeOIDC.start()
        let transport = HTTPTransport(environment: [:])
        let store = InMemorySecretStore(timeout: 2)
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let engine = AccountEngine(store: store, clock: clock, timers: timers, hub: EventHub(), logger: logger) { Daemon.provider(for: $0, transport: transport) }
        await engine.apply(Configuration(accounts: [
            "corp": AccountConfiguration(name: "corp", provider: .oidc(OIDCProvider.Settings(issuer: fake.issuer, clientID: "cli")), refreshBefore: 300)
        ]))
        func tearDown() async {
            await engine.shutdown()
            await transport.shutdown()
            await fake.shutdown()
        }
        do {
            _ = await engine.commands.install(account: "corp", tokens: session, timeout: Patience.seconds)
            try await body(fake, engine, store)
        } catch {
            await tearDown()
            throw error
        }
        await tearDown()
    }

    @Test func aScopeNeverGrantedIsRefusedWithoutAskingTheProvider() async throws {
        var session = TokenSet(refreshToken: "r-granted")
        session.scopes = ["openid", "read:x"]
        try await withEngine(session) { fake, engine, _ in
            fake.grant(refreshToken: "r-granted", scopes: ["openid", "read:x", "admin"])
            let grantsBefore = fake.refreshGrants.count
            let refused = await engine.commands.token(account: "corp", kind: nil, scope: TokenScope(scopes: ["read:x", "admin"]), minValid: 60, timeout: Patience.seconds)
            guard case .failure(let error) = refused else { Issue.record("a wider token was served"); return }
            #expect(error.code == .badRequest)
            #expect(error.message.contains("\"admin\"") && error.message.contains("tokenctl login corp"))
            #expect(fake.refreshGrants.count == grantsBefore)
            // An ID token cannot be narrowed.
            let id = await engine.commands.token(account: "corp", kind: .id, scope: TokenScope(scopes: ["read:x"]), minValid: 60, timeout: Patience.seconds)
            #expect((try? id.get()) == nil && id.failureCode == .badRequest)
            // Within the grant: served, and from the cache the second time.
            let first = try await engine.commands.token(account: "corp", kind: nil, scope: TokenScope(scopes: ["read:x"]), minValid: 60, timeout: Patience.seconds).get()
            let second = try await engine.commands.token(account: "corp", kind: nil, scope: TokenScope(scopes: ["read:x"]), minValid: 60, timeout: Patience.seconds).get()
            #expect(first == second && fake.minted(first.token)?.scopes == ["read:x"])
            #expect(fake.refreshGrants.count == grantsBefore + 1)
        }
    }

    /// Many keys asked at once while the provider rotates on every grant: each grant presents the
    /// newest refresh token (the fake refuses a rotated-away one), and the keyring ends with it.
    @Test func concurrentKeysShareTheSingleFlightAndTheRotation() async throws {
        try await withEngine(TokenSet(refreshToken: "r0")) { fake, engine, store in
            fake.grant(refreshToken: "r0", scopes: ["openid", "a", "b", "c"], rotating: true)
            let keys = [["a"], ["b"], ["c"], ["a", "b"], ["b", "c"], ["a", "c"]].map { TokenScope(scopes: $0, audience: "https://api") }
            let results = await withTaskGroup(of: Result<TokenGrant, TokendError>.self) { group in
                for key in keys { group.addTask { await engine.commands.token(account: "corp", kind: nil, scope: key, minValid: 60, timeout: Patience.seconds) } }
                group.addTask { await engine.commands.refresh(account: "corp", timeout: Patience.seconds).map { _ in TokenGrant(token: "", kind: .access, expiresAt: Date()) } }
                return await group.reduce(into: []) { $0.append($1) }
            }
            for result in results { #expect((try? result.get()) != nil, "\(result)") }
            let live = fake.liveRefreshTokens
            #expect(live.count == 1)
            let stored = try #require(try await store.load(account: "corp").get())
            #expect(live.contains(stored.refreshToken))
            // Every grant succeeded above, so none presented a rotated-away token (the fake refuses
            // those). Each key took one grant; the refresh took one more, or joined one in flight.
            #expect((keys.count...(keys.count + 2)).contains(fake.refreshGrants.count), "\(fake.refreshGrants.count) grants")
        }
    }

    /// A provider that ignores `scope` on refresh and answers with the whole grant: refused, never
    /// served; the refresh token it rotated in the same answer is still kept.
    @Test func aWiderAnswerIsRefusedButItsRotationKept() async throws {
        try await withEngine(TokenSet(refreshToken: "r0")) { fake, engine, store in
            fake.script([.object(200, ["access_token": "wide-token-canary", "expires_in": 3600, "scope": "openid read:x admin", "refresh_token": "r-rotated"])])
            let wide = await engine.commands.token(account: "corp", kind: nil, scope: TokenScope(scopes: ["read:x"]), minValid: 60, timeout: Patience.seconds)
            #expect(wide.failureCode == .configError)
            guard case .failure(let error) = wide else { return }
            #expect(error.message.contains("admin") && !error.message.contains("wide-token-canary"))
            let stored = try await store.load(account: "corp").get()
            #expect(stored?.refreshToken == "r-rotated")
            // The account itself is unharmed and serves its own token.
            #expect((try? await engine.commands.token(account: "corp", kind: nil, minValid: 60, timeout: Patience.seconds).get()) != nil)
        }
    }

    @Test func firebaseAccountsHaveNoScopedTokens() async throws {
        let fixture = try await EngineFixture.make()
        let response = await fixture.respond(.token(TokenArgs(account: "work", audience: "https://api.example.com")))
        #expect(response.error?.code == .badRequest && response.error?.message.contains("firebase") == true)
        await fixture.shutdown()
    }

    /// A key in use is refreshed ahead of expiry by the account's timer; the next request gets the
    /// new token.
    @Test func aUsedKeyIsRefreshedAheadByTheAccountsTimer() async throws {
        let clock = ManualClock(Date())
        try await withEngine(TokenSet(refreshToken: "r0"), clock: clock, timers: clock) { fake, engine, _ in
            fake.grant(refreshToken: "r0", scopes: ["openid", "read:x"])
            let key = TokenScope(scopes: ["read:x"])
            let first = try await engine.commands.token(account: "corp", kind: nil, scope: key, minValid: 60, timeout: Patience.seconds).get()
            clock.advance(by: 3400)  // inside the 300 s margin of a one-hour token
            // The cached token still has 200 s, so a request with min_valid 60 is served from the
            // cache: only the timer's proactive grant can change what it gets. Poll for that.
            let deadline = Date().addingTimeInterval(20)
            var second = first
            while second.token == first.token, Date() < deadline {
                clock.advance(by: 0)  // fires what is due; the account's own refresh may take the slot first
                try await Task.sleep(for: .milliseconds(20))
                second = try await engine.commands.token(account: "corp", kind: nil, scope: key, minValid: 60, timeout: Patience.seconds).get()
            }
            #expect(fake.refreshGrants.filter({ $0.form["scope"] == "read:x" }).count == 2)
            #expect(second.token != first.token && fake.minted(second.token)?.scopes == ["read:x"])
        }
    }
}

extension Result where Failure == TokendError {
    var failureCode: TokendError.Code? {
        guard case .failure(let error) = self else { return nil }
        return error.code
    }
}
