import Testing
import TokendCore
import TokendKeyring
import TokendProtocol
import TokendProviders
@testable import TokendServer
import TokendFakes
import TokendTestSupport

@Suite struct AccountEngineTests {
    /// The engine on the fake in both of the fixture's modes: in-process and over loopback.
    @Test(arguments: FakeFirebase.Serving.allCases)
    func importRefreshesAndPersists(_ serving: FakeFirebase.Serving) async throws {
        let fixture = try await EngineFixture.make(serving: serving)
        try await withTearDown(fixture, tearDown: { await $0.shutdown() }) { fixture in
            let session = try await fixture.importSession()
            #expect(fixture.store.storedTokens(account: "work")?.refreshToken == session.refreshToken)
            // The import's first ID token is in the keyring when the import answers, not paced
            // behind other write-backs: a restart right after serves it (AccountEngine+Sessions).
            #expect(fixture.store.storedTokens(account: "work")?.idToken != nil)
            let grant = try await fixture.engine.commands.token(account: "work", kind: nil, minValid: 60, timeout: Patience.seconds).get()
            #expect(grant.kind == .id)
            #expect(fixture.tokenRequests == 1, "the held token is served without another refresh")
        }
    }

    /// 200 concurrent requests on an expired token: one request reaches the provider, and all
    /// 200 get the same live token.
    @Test func aHerdOnAnExpiredTokenCausesExactlyOneRefresh() async throws {
        var options = FakeFirebase.Options()
        options.latency = 0.3  // keeps the refresh in flight while the herd piles up
        let clock = ManualClock()
        let fixture = try await EngineFixture.make(options: options, clock: clock)
        try await withTearDown(fixture, tearDown: { await $0.shutdown() }) { fixture in
            _ = try await fixture.importSession()
            let before = fixture.tokenRequests
            clock.advance(by: 7200)  // the held token is now two hours dead
            let tokens = await withTaskGroup(of: String?.self) { group in
                for _ in 0..<200 {
                    group.addTask { try? await fixture.engine.commands.token(account: "work", kind: .id, minValid: 60, timeout: Patience.seconds).get().token }
                }
                return await group.reduce(into: [String?]()) { $0.append($1) }
            }
            #expect(fixture.tokenRequests == before + 1)
            #expect(tokens.allSatisfy { $0 != nil })
            #expect(Set(tokens.compactMap { $0 }).count == 1)
        }
    }

    @Test func refreshJoinsTheOneInFlight() async throws {
        var options = FakeFirebase.Options()
        options.latency = 0.3
        let fixture = try await EngineFixture.make(options: options)
        try await withTearDown(fixture, tearDown: { await $0.shutdown() }) { fixture in
            _ = try await fixture.importSession()
            let before = fixture.tokenRequests
            async let first = fixture.engine.commands.refresh(account: "work", timeout: Patience.seconds)
            async let second = fixture.engine.commands.refresh(account: "work", timeout: Patience.seconds)
            let (a, b) = await (first, second)
            #expect(try a.get() == b.get())
            #expect(fixture.tokenRequests == before + 1)
        }
    }

    /// Runs `during` while a refresh of an imported session is at a rotating provider that holds
    /// its answer back, lets the refresh finish, then runs `check` with what `during` returned.
    func whileARefreshIsInFlight<Value>(
        _ during: (EngineFixture) async throws -> Value, then check: (EngineFixture, Value) async throws -> Void
    ) async throws {
        var options = FakeFirebase.Options()
        options.latency = 0.5
        options.rotate = true
        let fixture = try await EngineFixture.make(options: options)
        try await withTearDown(fixture, tearDown: { await $0.shutdown() }) { fixture in
            _ = try await fixture.importSession()
            let logged = fixture.fake.requests.count
            async let refreshing = fixture.engine.commands.refresh(account: "work", timeout: Patience.seconds)
            // In flight: the fake has taken the request and holds its answer back (latency).
            #expect(await fixture.fake.waitForRequests(count: logged + 1, timeout: Patience.seconds), "the refresh never reached the fake")
            let value = try await during(fixture)
            _ = await refreshing
            try await check(fixture, value)
        }
    }

    @Test func logoutDuringARefreshWins() async throws {
        try await whileARefreshIsInFlight { fixture in
            _ = try await fixture.engine.commands.logout(account: "work").get()
        } then: { fixture, _ in
            #expect(fixture.store.storedTokens(account: "work") == nil, "a slow refresh never resurrects a logged-out session")
            let state = try await fixture.engine.statuses(account: "work").get().first?.state
            #expect(state == "needs_login")
        }
    }

    /// A refresh that answers after a reload removed its account: the rotated refresh token is
    /// the only live one, and still reaches the keyring (KeyringUpkeep.saveOrphanedRotation).
    @Test func aRotationAnsweredAfterItsAccountWasRemovedIsStillStored() async throws {
        try await whileARefreshIsInFlight { fixture in
            let stored = try #require(fixture.store.storedTokens(account: "work"))
            await fixture.engine.apply(Configuration(accounts: [:]))
            return try #require(stored.idToken.flatMap { FirebaseClaims(token: $0)?.uid })
        } then: { fixture, uid in
            let rotated = try #require(fixture.fake.newestRefreshToken(uid: uid))
            try await poll("the rotated refresh token reaches the keyring") { fixture.store.storedTokens(account: "work")?.refreshToken == rotated }
        }
    }

    @Test func importDuringARefreshWins() async throws {
        try await whileARefreshIsInFlight { fixture in
            let newer = fixture.fake.createUser()
            _ = await fixture.engine.commands.install(account: "work", tokens: TokenSet(refreshToken: newer.refreshToken), timeout: Patience.seconds)
            return newer.uid
        } then: { fixture, uid in
            let stored = try #require(fixture.store.storedTokens(account: "work"))
            #expect(stored.refreshToken == fixture.fake.newestRefreshToken(uid: uid))
        }
    }

    @Test func permanentFailureDeletesOnlyTheRefreshTokenThatFailed() async throws {
        let fixture = try await EngineFixture.make()
        try await withTearDown(fixture, tearDown: { await $0.shutdown() }) { fixture in
            _ = try await fixture.importSession()
            fixture.fake.faults.inject(.firebaseError("USER_DISABLED"), count: 1)
            let result = await fixture.engine.commands.refresh(account: "work", timeout: Patience.seconds)
            #expect((try? result.get()) == nil)
            #expect(fixture.store.storedTokens(account: "work") == nil)
            let before = fixture.tokenRequests
            let answer = await fixture.engine.commands.token(account: "work", kind: nil, minValid: 0, timeout: Patience.seconds)
            guard case .failure(let error) = answer else { Issue.record("expected needs_login"); return }
            #expect(error.code == .needsLogin)
            #expect(fixture.tokenRequests == before)
        }
    }

    @Test func lockedKeyringServesFromMemoryAndWritesBackOnUnlock() async throws {
        let store = InMemorySecretStore(timeout: 2)
        var options = FakeFirebase.Options()
        options.rotate = true
        let fixture = try await EngineFixture.make(options: options, store: store)
        try await withTearDown(fixture, tearDown: { await $0.shutdown() }) { fixture in
            let session = try await fixture.importSession()
            store.simulatedState = .locked
            _ = try await fixture.engine.commands.refresh(account: "work", timeout: Patience.seconds).get()
            let status = try #require(try await fixture.engine.statuses(account: "work").get().first)
            #expect(status.keyring == .locked)
            #expect(status.unsaved == true)
            #expect(store.storedTokens(account: "work")?.refreshToken != fixture.fake.newestRefreshToken(uid: session.uid))
            _ = try await fixture.engine.commands.token(account: "work", kind: nil, minValid: 60, timeout: Patience.seconds).get()
            store.simulatedState = .available
            let deadline = ContinuousClock.now + .seconds(15)
            while store.storedTokens(account: "work")?.refreshToken != fixture.fake.newestRefreshToken(uid: session.uid), ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(store.storedTokens(account: "work")?.refreshToken == fixture.fake.newestRefreshToken(uid: session.uid))
        }
    }

    /// The import's refresh taught the lifetime: a request no fresh token can satisfy costs no
    /// refresh, which at some providers would cancel the token other clients hold (issue 32).
    @Test func minValidLongerThanALifetimeIsABadRequestWithoutARefresh() async throws {
        let fixture = try await EngineFixture.make()
        try await withTearDown(fixture, tearDown: { await $0.shutdown() }) { fixture in
            _ = try await fixture.importSession()
            let before = fixture.tokenRequests
            let answer = await fixture.engine.commands.token(account: "work", kind: nil, minValid: 7200, timeout: Patience.seconds)
            guard case .failure(let error) = answer else { Issue.record("expected failure"); return }
            #expect(error.code == .badRequest)
            #expect(fixture.tokenRequests == before)
        }
    }
}

/// The handler on the real engine: what the engine itself decides reaches the client. The
/// handler's own mapping is tested on a stub (RequestRouterTests).
@Suite struct HandlerOnEngineTests {
    @Test func everyRequestGetsAReply() async throws {
        let fixture = try await EngineFixture.make()
        try await withTearDown(fixture, tearDown: { await $0.shutdown() }) { fixture in
            #expect(await fixture.respond(.token(TokenArgs(account: "other"))).error?.code == .unknownAccount)
            #expect(await fixture.respond(.token(TokenArgs(account: "work"))).error?.code == .needsLogin)
            #expect(await fixture.respond(.status(StatusArgs(account: "work"))).accounts?.first?.state == "needs_login")
        }
    }

    @Test func watchStreamsEventsWithoutTokens() async throws {
        let fixture = try await EngineFixture.make()
        try await withTearDown(fixture, tearDown: { await $0.shutdown() }) { fixture in
            guard case .stream(let lines) = await fixture.handler.handle(DecodedRequest(.watch(WatchArgs(account: "work")))) else {
                Issue.record("expected watch"); return
            }
            var iterator = lines.makeAsyncIterator()
            guard case .response(let response)? = await iterator.next() else { Issue.record("expected the acknowledgement"); return }
            #expect(response.watching == ["work"])
            let session = try await fixture.importSession()
            var kinds: [Event.Kind] = []
            while kinds.count < 2, case .event(let event)? = await iterator.next() {
                kinds.append(event.event)
                let line = String(decoding: WireCoding.encodeLine(event), as: UTF8.self)
                #expect(!line.contains(session.refreshToken))
            }
            #expect(kinds == [.imported, .refreshed])
        }
    }
}
