import Testing
@testable import TokendCore

/// The state machine on a manual clock: instants are passed in, nothing waits for real time.
@Suite struct AccountMachineTests {
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    func session(expiresIn: Double = 3600, at now: Date? = nil, refreshToken: String = "rt-1") -> TokenSet {
        let now = now ?? t0
        return TokenSet(
            refreshToken: refreshToken, idToken: "id-1", idTokenExpiresAt: now.addingTimeInterval(expiresIn),
            accessToken: "id-1", accessTokenExpiresAt: now.addingTimeInterval(expiresIn), issuedAt: now)
    }

    func issued(_ id: String, expiresIn: Double = 3600, refreshToken: String? = nil) -> IssuedTokens {
        IssuedTokens(refreshToken: refreshToken, idToken: id, accessToken: id, expiresIn: expiresIn)
    }

    @Test func withoutASessionItNeedsLogin() {
        let machine = AccountMachine()
        #expect(machine.answer(.id, minValid: 60, at: t0) == .refuse(TokendError(.needsLogin, AccountMachine.noSessionReason)))
        #expect(machine.nextWake == nil)
    }

    @Test func servesAHeldTokenThatMeetsMinValid() {
        let machine = AccountMachine(tokens: session())
        #expect(machine.answer(.id, minValid: 60, at: t0) == .token("id-1", expiresAt: t0.addingTimeInterval(3600)))
    }

    @Test func neverServesATokenWithLessThanMinValidLeft() {
        let machine = AccountMachine(tokens: session())
        #expect(machine.answer(.id, minValid: 61, at: t0.addingTimeInterval(3540)) == .refresh)
        #expect(machine.answer(.id, minValid: 0, at: t0.addingTimeInterval(3600)) == .refresh)
    }

    @Test func proactiveRefreshIsDueAtExpiryMinusMargin() {
        let machine = AccountMachine(tokens: session())
        #expect(machine.nextWake == t0.addingTimeInterval(3300))
        #expect(!machine.isRefreshDue(at: t0.addingTimeInterval(3299)))
        #expect(machine.isRefreshDue(at: t0.addingTimeInterval(3300)))
    }

    @Test func aTimerThatSleptThroughTheExpiryStillFindsTheRefreshDue() {
        let machine = AccountMachine(tokens: session())
        let afterSuspend = t0.addingTimeInterval(7200)
        #expect(machine.isRefreshDue(at: afterSuspend))
        #expect(machine.answer(.id, minValid: 0, at: afterSuspend) == .refresh)
    }

    @Test func singleFlightOnlyOneTicketAtATime() {
        var machine = AccountMachine(tokens: session())
        let ticket = machine.startRefresh(at: t0)
        #expect(ticket != nil)
        #expect(machine.startRefresh(at: t0) == nil)
        #expect(machine.answer(.id, minValid: 600, at: t0) == .wait)
    }

    @Test func rotatedRefreshTokenReplacesTheOld() {
        var machine = AccountMachine(tokens: session())
        let ticket = machine.startRefresh(at: t0)!
        let now = t0.addingTimeInterval(5)
        let completion = machine.finishPersisting(ticket, .refreshed(issued("id-2", refreshToken: "rt-2")), at: now)
        guard case .refreshed(let tokens) = completion else { Issue.record("expected refreshed"); return }
        #expect(tokens.refreshToken == "rt-2")
        #expect(tokens.idToken == "id-2")
        #expect(tokens.idTokenExpiresAt == t0.addingTimeInterval(3600 - TokenSet.lifetimeGranularity), "counted from when the request went out")
        #expect(machine.lastRefresh == now)
    }

    @Test func answerWithoutRefreshTokenKeepsTheOld() {
        var machine = AccountMachine(tokens: session())
        let ticket = machine.startRefresh(at: t0)!
        _ = machine.finishPersisting(ticket, .refreshed(issued("id-2")), at: t0)
        #expect(machine.tokens?.refreshToken == "rt-1")
    }

    @Test func answerWithoutIDTokenKeepsNoStaleOneAsIfFresh() {
        var start = session(expiresIn: 60)
        start.accessToken = "access-1"
        var machine = AccountMachine(tokens: start)
        let ticket = machine.startRefresh(at: t0)!
        let later = t0.addingTimeInterval(120)
        _ = machine.finishPersisting(ticket, .refreshed(IssuedTokens(accessToken: "access-2", expiresIn: 3600)), at: later)
        #expect(machine.tokens?.idToken == nil)
        #expect(machine.tokens?.accessToken == "access-2")
        // Another refresh would answer the same and, at some providers, cancel the access token
        // others hold (issue 32): refused at once, the lifetime re-learnt at the normal refresh.
        #expect(machine.answer(.id, minValid: 0, at: later) == .refuse(Advice.unsatisfiable(kind: .id, minValid: 0, tokens: machine.tokens, now: later)))
    }

    @Test func transientFailureKeepsTokensAndBacksOff() {
        var machine = AccountMachine(tokens: session())
        let ticket = machine.startRefresh(at: t0)!
        let failure = RefreshFailure(code: "http_503", message: "HTTP 503")
        let completion = machine.finish(ticket, .transient(failure, retryAfter: nil), at: t0, jitterDraw: 0.5)
        #expect(completion == .willRetry(failure, retryAt: t0.addingTimeInterval(0.5)))
        #expect(machine.tokens?.refreshToken == "rt-1")
        #expect(machine.answer(.id, minValid: 60, at: t0) == .token("id-1", expiresAt: t0.addingTimeInterval(3600)))
        #expect(machine.stateName(at: t0) == "retrying")
    }

    @Test func deadTokenDuringBackoffIsNeverServed() {
        var machine = AccountMachine(tokens: session(expiresIn: 10))
        let ticket = machine.startRefresh(at: t0)!
        _ = machine.finish(ticket, .transient(RefreshFailure(code: "timeout", message: "t"), retryAfter: 100), at: t0, jitterDraw: 0)
        #expect(machine.answer(.id, minValid: 0, at: t0.addingTimeInterval(11)) == .retryAt(t0.addingTimeInterval(100)))
        #expect(machine.stateName(at: t0.addingTimeInterval(11)) == "unavailable")
    }

    @Test func consecutiveFailuresGrowTheWindow() {
        var machine = AccountMachine(tokens: session())
        var now = t0
        var delays: [Double] = []
        for _ in 0..<12 {
            let ticket = machine.startRefresh(at: now)!
            guard case .willRetry(_, let retryAt) = machine.finish(ticket, .transient(RefreshFailure(code: "x", message: "x"), retryAfter: nil), at: now, jitterDraw: 0.999) else {
                Issue.record("expected retry"); return
            }
            delays.append(retryAt.timeIntervalSince(now))
            #expect(machine.startRefresh(at: now) == nil, "backing off: no refresh before retryAt")
            now = retryAt
        }
        #expect(delays.first! < 1)
        #expect(delays.last! == 300)
        #expect(delays == delays.sorted())
    }

    @Test func permanentFailureNeedsLoginAndNamesTheFailedRefreshToken() {
        var machine = AccountMachine(tokens: session())
        let ticket = machine.startRefresh(at: t0)!
        let failure = RefreshFailure(code: "TOKEN_EXPIRED", message: "TOKEN_EXPIRED")
        #expect(machine.finish(ticket, .needsLogin(failure), at: t0, jitterDraw: 0) == .loggedOut(failure, refreshToken: "rt-1"))
        #expect(machine.tokens == nil)
        #expect(machine.nextWake == nil)
        guard case .refuse(let error) = machine.answer(.id, minValid: 0, at: t0) else { Issue.record("expected refusal"); return }
        #expect(error.code == .needsLogin)
    }

    @Test func configurationFailureServesWhileValidThenRefusesWithConfigError() {
        var machine = AccountMachine(tokens: session(expiresIn: 100))
        let ticket = machine.startRefresh(at: t0)!
        _ = machine.finish(ticket, .misconfigured(RefreshFailure(code: "API_KEY_INVALID", message: "bad key")), at: t0, jitterDraw: 0)
        #expect(machine.answer(.id, minValid: 60, at: t0) == .token("id-1", expiresAt: t0.addingTimeInterval(100)))
        guard case .refuse(let error) = machine.answer(.id, minValid: 60, at: t0.addingTimeInterval(50)) else { Issue.record("expected refusal"); return }
        #expect(error.code == .configError)
        #expect(machine.startRefresh(at: t0) == nil)
        #expect(machine.startRefresh(at: t0, force: true) != nil)
    }

    @Test func aSlowRefreshNeverWritesOverANewerImport() {
        var machine = AccountMachine(tokens: session())
        let ticket = machine.startRefresh(at: t0)!
        machine.install(session(refreshToken: "rt-imported"), jitterDraw: 0)
        #expect(machine.tokensAfter(ticket, issued("id-late", refreshToken: "rt-late"), at: t0) == nil)
        #expect(machine.finish(ticket, .refreshed(issued("id-late", refreshToken: "rt-late")), at: t0, jitterDraw: 0) == .stale)
        #expect(machine.tokens?.refreshToken == "rt-imported")
    }

    /// New tokens are persisted before they are served: until the write is over, requests wait.
    @Test func newTokensAreServedOnlyOncePersisted() {
        var machine = AccountMachine(tokens: session())
        let ticket = machine.startRefresh(at: t0)!
        guard case .persist(let next) = machine.finish(ticket, .refreshed(issued("id-2", refreshToken: "rt-2")), at: t0, jitterDraw: 0) else {
            Issue.record("expected persist"); return
        }
        #expect(next.refreshToken == "rt-2")
        #expect(machine.tokens?.refreshToken == "rt-1")
        // The held token is served again within its own horizon (3300 s) while the keyring writes;
        // a request reaching past it waits for the new tokens.
        #expect(machine.answer(.id, minValid: 3295, at: t0.addingTimeInterval(10)) == .wait, "still refreshing while the keyring writes")
        #expect(machine.persisted(ticket, next, at: t0, jitterDraw: 0) == .refreshed(next))
        #expect(machine.tokens == next)
    }

    /// A logout while the keyring wrote the refreshed session: the write's confirmation is stale.
    @Test func aLogoutDuringThePersistWins() {
        var machine = AccountMachine(tokens: session())
        let ticket = machine.startRefresh(at: t0)!
        guard case .persist(let next) = machine.finish(ticket, .refreshed(issued("id-2")), at: t0, jitterDraw: 0) else {
            Issue.record("expected persist"); return
        }
        machine.forget(reason: "logged out")
        #expect(machine.persisted(ticket, next, at: t0, jitterDraw: 0) == .stale)
        #expect(machine.tokens == nil)
    }

    /// A request that began before a refresh that still cannot satisfy it is refused, not
    /// refreshed again: the machine decides from the request's start time.
    @Test func aRefreshSinceTheRequestBeganThatCannotSatisfyItIsFinal() {
        var machine = AccountMachine(tokens: session())
        let ticket = machine.startRefresh(at: t0)!
        _ = machine.finishPersisting(ticket, .refreshed(issued("id-2")), at: t0.addingTimeInterval(1))
        // 3299 s: what a fresh token promises (its lifetime less the margin), one second more than
        // this one, a second old, still can (a longer min_valid is refused before any refresh).
        #expect(machine.answer(.id, minValid: 3299, at: t0.addingTimeInterval(1)) == .refresh, "a new request may refresh")
        guard case .refuse(let error) = machine.answer(.id, minValid: 3299, at: t0.addingTimeInterval(1), requestStart: t0) else {
            Issue.record("expected refusal"); return
        }
        #expect(error.code == .badRequest)
    }

    /// A refresh sent before the request began is no answer to it: a refresh in flight across a
    /// forward step of the wall clock comes back with tokens already dead by the stepped clock,
    /// and the request that came after the step refreshes once more instead of being refused.
    @Test func aRefreshSentBeforeTheRequestBeganIsNotItsAnswer() {
        var machine = AccountMachine(tokens: session())
        let ticket = machine.startRefresh(at: t0)!
        _ = machine.finishPersisting(ticket, .refreshed(issued("id-2")), at: t0.addingTimeInterval(1))
        #expect(machine.answer(.id, minValid: 3299, at: t0.addingTimeInterval(1), requestStart: t0.addingTimeInterval(0.5)) == .refresh)
    }

    /// A refresh answered after a forward step of the wall clock (half an hour by the wall clock,
    /// a second by the steady one) brings tokens dead by the stepped clock: no verdict on the
    /// request that waited for it, which refreshes again instead of being refused with 64 (the
    /// 30-minute chaos run, seed 5077). A refresh that really took that long stays final.
    @Test func aRefreshAnsweredAcrossAForwardClockStepIsNoVerdict() {
        let stepped = t0.addingTimeInterval(1790)
        var machine = AccountMachine(tokens: session(expiresIn: 20))
        let ticket = machine.startRefresh(at: t0)!
        _ = machine.finishPersisting(ticket, .refreshed(issued("id-2", expiresIn: 20)), at: stepped, took: 1)
        #expect(machine.answer(.id, minValid: 1, at: stepped, requestStart: t0) == .refresh)
        let next = machine.startRefresh(at: stepped)!
        _ = machine.finishPersisting(next, .refreshed(issued("id-3", expiresIn: 20)), at: stepped.addingTimeInterval(1), took: 1)
        #expect(machine.answer(.id, minValid: 1, at: stepped.addingTimeInterval(1), requestStart: t0) == .token("id-3", expiresAt: stepped.addingTimeInterval(20 - TokenSet.lifetimeGranularity)))

        var slow = AccountMachine(tokens: session(expiresIn: 20))
        let slowTicket = slow.startRefresh(at: t0)!
        _ = slow.finishPersisting(slowTicket, .refreshed(issued("id-2", expiresIn: 20)), at: stepped, took: 1790)
        guard case .refuse(let error) = slow.answer(.id, minValid: 1, at: stepped, requestStart: t0) else {
            Issue.record("expected the slow refresh to be final"); return
        }
        #expect(error.code == .badRequest)
    }

    @Test func aSlowRefreshNeverResurrectsALoggedOutSession() {
        var machine = AccountMachine(tokens: session())
        let ticket = machine.startRefresh(at: t0)!
        machine.forget(reason: "logged out")
        #expect(machine.finish(ticket, .refreshed(issued("id-late")), at: t0, jitterDraw: 0) == .stale)
        #expect(machine.tokens == nil)
    }

    @Test func lockedKeyringIsNotAMissingSession() {
        var machine = AccountMachine()
        machine.markKeyringUnreadable(TokendError(.keyringLocked, "locked"))
        #expect(machine.answer(.id, minValid: 0, at: t0) == .refuse(TokendError(.keyringLocked, "locked")))
        #expect(machine.stateName(at: t0) == "waiting_for_keyring")
        machine.restore(session(), jitterDraw: 0)
        #expect(machine.stateName(at: t0) == "active")
    }

    @Test func onlyARefreshTokenMeansRefreshAtOnce() {
        let machine = AccountMachine(tokens: TokenSet(refreshToken: "rt"))
        #expect(machine.isRefreshDue(at: t0))
        #expect(machine.answer(.id, minValid: 0, at: t0) == .refresh)
    }
}

extension AccountMachineTests {
    @Test func aScopedGrantTakesOnlyARotatedRefreshToken() {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let held = TokenSet(refreshToken: "r1", accessToken: "a1", accessTokenExpiresAt: now.addingTimeInterval(3600), issuedAt: now)
        var machine = AccountMachine(tokens: held)
        let ticket = machine.startRefresh(at: now)!
        #expect(machine.startRefresh(at: now) == nil, "one grant per refresh token at a time")
        #expect(machine.tokensAfterRotation(ticket, to: nil) == nil)
        #expect(machine.tokensAfterRotation(ticket, to: "r1") == nil)
        #expect(machine.tokensAfterRotation(ticket, to: "r2")?.refreshToken == "r2")
        let completion = machine.finishScopedGrant(ticket, .refreshed(IssuedTokens(refreshToken: "r2", accessToken: "narrow", expiresIn: 60)), at: now, jitterDraw: 0)
        var rotated = held
        rotated.refreshToken = "r2"
        #expect(completion == .refreshed(rotated))
        #expect(machine.tokens == rotated && machine.phase == .idle && machine.lastRefresh == nil)
        // A failure is the session's, as after a refresh.
        let second = machine.startRefresh(at: now)!
        #expect(machine.finishScopedGrant(second, .needsLogin(RefreshFailure(code: "invalid_grant", message: "gone")), at: now, jitterDraw: 0)
            == .loggedOut(RefreshFailure(code: "invalid_grant", message: "gone"), refreshToken: "r2"))
    }
}

extension AccountMachine {
    /// A refresh's outcome as the engine applies it: a `.persist` is written (here: nowhere)
    /// and confirmed at once.
    mutating func finishPersisting(_ ticket: AccountTicket, _ outcome: RefreshOutcome, at now: Date, took: Double? = nil) -> Completion {
        let completion = finish(ticket, outcome, at: now, took: took, jitterDraw: 0)
        guard case .persist(let next) = completion else { return completion }
        return persisted(ticket, next, at: now, jitterDraw: 0)
    }
}
