import Testing
import TokendCore
import TokendTestClock

/// The cache of down-scoped tokens and its keys, on a manual clock.
@Suite struct ScopedTokenCacheTests {
    let read = TokenScope(scopes: ["read:x"], audience: "https://api.example.com")
    let write = TokenScope(scopes: ["write:y"])

    @Test func aKeyIsTheSetOfScopesAndTheAudience() throws {
        #expect(try TokenScope(scope: "b a  a", audience: nil) == TokenScope(scopes: ["a", "b"]))
        #expect(try TokenScope(scope: "a", audience: "x") != TokenScope(scopes: ["a"]))
        #expect(try TokenScope(scope: nil, audience: nil) == nil)
        #expect(try TokenScope(scope: "  ", audience: "") == nil)
        #expect(try TokenScope(scope: nil, audience: "https://api")?.scopeParameter == nil)
        #expect(TokenScope(scopes: ["b", "a"]).scopeParameter == "a b")
        #expect(TokenScope(scopes: ["a", "c"]).notGranted(by: ["a", "b"]) == ["c"])
        for (scope, audience) in [("quote\"d", nil), ("back\\slash", nil), ("a\nb", nil), (String(repeating: "s", count: 5000), nil), (nil, "with space")] {
            #expect(throws: TokendError.self) { try TokenScope(scope: scope, audience: audience) }
        }
    }

    @Test func servesATokenOfItsSessionWhileItMeetsMinValid() {
        let clock = ManualClock()
        var cache = ScopedTokenCache()
        cache.store("t1", expiresAt: clock.now().addingTimeInterval(600), issuedAt: clock.now(), for: read, generation: 3, requested: true, at: clock.now())
        #expect(cache.token(for: read, generation: 3, minValid: 60, at: clock.now())?.token == "t1")
        #expect(cache.token(for: write, generation: 3, minValid: 60, at: clock.now()) == nil)
        // Another session (a login, an import, a logout moved the generation on): never served.
        #expect(cache.token(for: read, generation: 4, minValid: 60, at: clock.now()) == nil)
        clock.advance(by: 550)
        #expect(cache.token(for: read, generation: 3, minValid: 60, at: clock.now()) == nil)
        #expect(cache.token(for: read, generation: 3, minValid: 30, at: clock.now())?.token == "t1")
        clock.advance(by: 50)
        #expect(cache.token(for: read, generation: 3, minValid: 0, at: clock.now()) == nil)
        cache.prune(at: clock.now(), generation: 3)
        #expect(cache.entries.isEmpty)
    }

    @Test func aKeyIsRefreshedAheadOnlyWhileItIsUsed() {
        let clock = ManualClock()
        let policy = RefreshPolicy(refreshBefore: 300)
        var cache = ScopedTokenCache()
        let start = clock.now()
        cache.store("t1", expiresAt: start.addingTimeInterval(3600), issuedAt: start, for: read, generation: 0, requested: true, at: start)
        clock.advance(by: 3000)
        #expect(cache.due(at: clock.now(), generation: 0, policy: policy).isEmpty)
        clock.advance(by: 300)  // inside the 300 s margin
        #expect(cache.due(at: clock.now(), generation: 0, policy: policy) == [read])
        #expect(cache.due(at: clock.now(), generation: 1, policy: policy).isEmpty)
        // The proactive refresh is not a use: unless asked for again, the next token is left to expire.
        let renewed = clock.now()
        cache.store("t2", expiresAt: renewed.addingTimeInterval(3600), issuedAt: renewed, for: read, generation: 0, requested: false, at: renewed)
        clock.advance(by: 3400)
        #expect(cache.due(at: clock.now(), generation: 0, policy: policy).isEmpty)
        cache.noteUse(of: read, at: clock.now())
        #expect(cache.due(at: clock.now(), generation: 0, policy: policy) == [read])
    }

    @Test func holdsAtMostTheBoundOfKeysDroppingTheLeastRecentlyUsed() {
        let clock = ManualClock()
        var cache = ScopedTokenCache()
        for index in 0..<ScopedTokenCache.maximumKeys {
            cache.store("t\(index)", expiresAt: clock.now().addingTimeInterval(3600), issuedAt: clock.now(), for: TokenScope(scopes: ["s\(index)"]), generation: 0, requested: true, at: clock.now())
            clock.advance(by: 1)
        }
        cache.noteUse(of: TokenScope(scopes: ["s0"]), at: clock.now())
        cache.store("new", expiresAt: clock.now().addingTimeInterval(3600), issuedAt: clock.now(), for: read, generation: 0, requested: true, at: clock.now())
        #expect(cache.entries.count == ScopedTokenCache.maximumKeys)
        #expect(cache.entries[TokenScope(scopes: ["s1"])] == nil)
        #expect(cache.entries[TokenScope(scopes: ["s0"])] != nil && cache.entries[read] != nil)
    }

    @Test func aRefusalAnswersOnlyRequestsThatWaitedForIt() {
        let clock = ManualClock()
        var cache = ScopedTokenCache()
        let asked = clock.now()
        clock.advance(by: 1)
        cache.refuse(write, TokendError(.badRequest, "no"), at: clock.now())
        #expect(cache.refusal(of: write, since: asked)?.code == .badRequest)
        clock.advance(by: 1)
        #expect(cache.refusal(of: write, since: clock.now()) == nil)
        #expect(cache.refusal(of: read, since: asked) == nil)
        cache.store("t", expiresAt: clock.now().addingTimeInterval(60), issuedAt: clock.now(), for: write, generation: 0, requested: true, at: clock.now())
        #expect(cache.refusal(of: write, since: asked) == nil)
    }
}
