import Testing
@testable import TokendCore

/// Promises on a manual clock (docs/architecture.md, "Promises"): a token served with `min_valid`
/// V stays usable V seconds at a provider that revokes the old access token when it refreshes,
/// and a request no fresh token can satisfy is refused without a refresh.
@Suite struct TokenPromisesTests {
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    /// A session issued at t0 living `lifetime` seconds (the margin is a third of 30 s: 10 s).
    func session(lifetime: Double = 30, token: String = "at-1") -> TokenSet {
        TokenSet(refreshToken: "rt-1", accessToken: token, accessTokenExpiresAt: t0.addingTimeInterval(lifetime), issuedAt: t0)
    }

    func at(_ seconds: Double) -> Date { t0.addingTimeInterval(seconds) }

    // MARK: - The machine: the horizon and the unsatisfiable request

    @Test func nothingIsServedWhosePromiseReachesPastTheProactiveRefresh() {
        let machine = AccountMachine(tokens: session())
        #expect(machine.servingHorizon == at(20))
        // 22 s are left, more than the 15 asked, but the refresh comes at 20 s: refresh first.
        #expect(machine.answer(.access, minValid: 15, at: at(8)) == .refresh)
        #expect(machine.answer(.access, minValid: 12, at: at(8)) == .token("at-1", expiresAt: at(30)))
    }

    @Test func whileARefreshIsInFlightTheHeldTokenIsNotServed() {
        var machine = AccountMachine(tokens: session())
        _ = machine.startRefresh(at: at(1))
        #expect(machine.servingHorizon == .distantPast)
        #expect(machine.answer(.access, minValid: 1, at: at(1)) == .wait)
    }

    @Test func whileTheKeyringWritesTheAnswerTheHeldTokenIsServedWithinItsHorizon() {
        var machine = AccountMachine(tokens: session())
        let ticket = machine.startRefresh(at: at(1))!
        _ = machine.finish(ticket, .refreshed(IssuedTokens(accessToken: "at-2", expiresIn: 30)), at: at(1), jitterDraw: 0)
        #expect(machine.servingHorizon == at(20))
        #expect(machine.answer(.access, minValid: 5, at: at(2)) == .token("at-1", expiresAt: at(30)))
        #expect(machine.answer(.access, minValid: 19, at: at(2)) == .wait)
    }

    @Test func duringABackoffTheTokenIsServedWhileItLasts() {
        var machine = AccountMachine(tokens: session())
        let ticket = machine.startRefresh(at: at(20))!
        _ = machine.finish(ticket, .transient(RefreshFailure(code: "http_503", message: "unavailable"), retryAfter: nil), at: at(20), jitterDraw: 0)
        #expect(machine.servingHorizon == nil)
        #expect(machine.answer(.access, minValid: 5, at: at(21)) == .token("at-1", expiresAt: at(30)))
    }

    @Test func aRequestNoFreshTokenCanSatisfyIsRefusedWithoutARefresh() {
        let machine = AccountMachine(tokens: session())
        #expect(machine.freshPromiseSpan == 20)
        // Longer than the lifetime, and longer than what a fresh token can promise: refused,
        // both with the held token alive and with it dead.
        for (minValid, now) in [(60.0, at(1)), (21.0, at(1)), (60.0, at(40))] {
            guard case .refuse(let error) = machine.answer(.access, minValid: minValid, at: now) else {
                Issue.record("min_valid \(minValid) at +\(now.timeIntervalSince(t0)) s was not refused")
                continue
            }
            #expect(error.code == .badRequest)
            #expect(error.message.contains("20 s of the 30 s"))
        }
        // Exactly what a fresh token promises still refreshes.
        #expect(machine.answer(.access, minValid: 20, at: at(1)) == .refresh)
    }

    @Test func theLifetimeIsLearntAgainAtTheNextRefresh() {
        var machine = AccountMachine(tokens: session())
        let ticket = machine.startRefresh(at: at(20))!
        guard case .persist(let next) = machine.finish(ticket, .refreshed(IssuedTokens(refreshToken: nil, idToken: nil, accessToken: "at-2", expiresIn: 300)), at: at(20), jitterDraw: 0) else {
            Issue.record("no tokens to persist"); return
        }
        _ = machine.persisted(ticket, next, at: at(20), jitterDraw: 0)
        // 300 s counted from when the refresh was sent, less a second for rounding: 299 s, of
        // which a fresh token promises two thirds.
        #expect(machine.freshPromiseSpan == 299 - 299.0 / 3)
        #expect(machine.answer(.access, minValid: 60, at: at(21)) == .token("at-2", expiresAt: at(319)))
    }

    // MARK: - The promises

    @Test func aGrantIsAPromiseARefreshWaitsFor() {
        var promises = TokenPromises(tokens: session(), horizon: at(20))
        #expect(promises.grant(.access, minValid: 5, at: at(10))?.value == "at-1")
        #expect(promises.until == at(15))
        #expect(promises.claimForRefresh(at: at(12)) == at(15))
        // A second client's longer promise moves it on; a shorter one does not move it back.
        #expect(promises.grant(.access, minValid: 8, at: at(12)) != nil)
        #expect(promises.grant(.access, minValid: 1, at: at(13)) != nil)
        #expect(promises.claimForRefresh(at: at(15)) == at(20))
    }

    @Test func nothingIsPromisedPastTheHorizon() {
        var promises = TokenPromises(tokens: session(), horizon: at(20))
        #expect(promises.grant(.access, minValid: 11, at: at(10)) == nil)
        #expect(promises.until == nil)
        #expect(promises.grant(.access, minValid: 10, at: at(10)) != nil)
    }

    @Test func aClaimedRefreshClosesTheTableUntilTheAccountChanges() {
        var promises = TokenPromises(tokens: session(), horizon: at(20))
        #expect(promises.claimForRefresh(at: at(10)) == nil)
        #expect(promises.grant(.access, minValid: 0, at: at(10)) == nil)
        // The refresh did not start after all (the machine said no): the engine's store reopens it.
        promises.update(tokens: session(), horizon: at(20))
        #expect(promises.grant(.access, minValid: 1, at: at(10)) != nil)
    }

    @Test func newTokensForgetTheOldTokensPromisesTheSameTokensKeepThem() {
        var promises = TokenPromises(tokens: session(), horizon: at(20))
        _ = promises.grant(.access, minValid: 9, at: at(10))
        promises.update(tokens: session(), horizon: nil)
        #expect(promises.outstanding(at: at(10)) == at(19))
        promises.update(tokens: session(token: "at-2"), horizon: at(40))
        #expect(promises.outstanding(at: at(10)) == nil)
    }
}

extension TokenPromisesTests {
    /// A refresh that hangs (a transient failure that has not said so yet) must not stop the
    /// held token from being served for long: after `refreshPatience`, or at the request's own
    /// deadline, requests take it.
    @Test func aSlowRefreshLetsWaitingRequestsHaveTheHeldToken() {
        var machine = AccountMachine(tokens: session())
        _ = machine.startRefresh(at: at(5))
        #expect(machine.heldDespiteRefresh(.access, minValid: 5, at: at(6), deadline: at(30)) == nil)
        #expect(machine.heldDespiteRefresh(.access, minValid: 5, at: at(6), deadline: at(6))?.value == "at-1")
        #expect(machine.heldDespiteRefresh(.access, minValid: 5, at: at(5 + AccountMachine.refreshPatience), deadline: at(30))?.value == "at-1")
        #expect(machine.heldDespiteRefresh(.access, minValid: 25, at: at(8), deadline: at(30)) == nil, "never less than min_valid")
        #expect(AccountMachine(tokens: session()).refreshPatienceEnds(deadline: at(30)) == nil, "nothing in flight")
    }
}
