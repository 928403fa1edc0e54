import Testing
@testable import TokendCore
import TokendTestClock

/// An account's transitions as values: an input in, the account and the effects out, on a
/// manual clock, with no engine, keyring or provider behind them: the state is TokendCore's,
/// over a configuration, provider and keyring failure of the test's own.
@Suite struct AccountTransitionTests {
    /// What the state reads of an account's configuration.
    struct Settings: AccountSettings {
        var name = "work"
        var endpoint = "https://securetoken.googleapis.com/v1/token k"
        var refreshBefore = 300.0
        var narrowsTokens = true
        var kindName = "firebase"
        var defaultTokenKind = TokenKind.id
        var policy: RefreshPolicy { RefreshPolicy(refreshBefore: refreshBefore) }
    }

    /// A provider the transitions never call: they only name the call as an effect.
    struct UncalledProvider: Sendable {}

    /// A keyring's failure, by code.
    struct KeyringFailure: StoredSessionFailure {
        var code: String
        init(_ code: String) { self.code = code }
        var isCorrupt: Bool { code == "corrupt" }
        func tokendError(account: String?) -> TokendError { TokendError(.keyringLocked, "keyring \(code)") }
    }

    typealias AccountState = TokendCore.AccountState<Settings, UncalledProvider, KeyringFailure>
    typealias AccountEffect = TokendCore.AccountEffect<KeyringFailure>

    let clock = ManualClock()
    let failure = RefreshFailure(code: "TOKEN_EXPIRED", message: "TOKEN_EXPIRED")

    func account(tokens: TokenSet? = TokenSet(refreshToken: "rt-1"), incarnation: UInt64 = 1) -> AccountState {
        let configuration = Settings()
        return AccountState(
            configuration: configuration, machine: AccountMachine(policy: configuration.policy, tokens: tokens),
            provider: UncalledProvider(), incarnation: incarnation)
    }

    /// Starts a refresh and returns its ticket (from the provider-call effect).
    func started(_ account: inout AccountState) throws -> AccountTicket {
        let effects = account.apply(.refreshWanted(force: false, narrowedTo: nil, requested: false, at: clock.now()))
        guard case .callProvider(let ticket) = effects.last else { throw Unexpected(effects) }
        #expect(effects == [.disarm, .wakeWaiters, .callProvider(ticket)])
        #expect(ticket.narrowedTo == nil && ticket.refreshToken == account.machine.tokens?.refreshToken)
        return ticket
    }

    struct Unexpected: Error {
        let effects: [AccountEffect]
        init(_ effects: [AccountEffect]) { self.effects = effects }
    }

    @Test func aSecondRefreshWhileOneIsInFlightDoesNothing() throws {
        var account = account()
        _ = try started(&account)
        #expect(account.apply(.refreshWanted(force: true, narrowedTo: nil, requested: false, at: clock.now())).isEmpty)
    }

    @Test func aRotatedRefreshTokenIsSavedBeforeItIsServed() throws {
        var account = account()
        let ticket = try started(&account)
        _ = clock.advance(by: 2)
        let issued = IssuedTokens(refreshToken: "rt-2", idToken: "id-2", expiresIn: 3600)
        let effects = account.apply(.refreshAnswered(ticket, .refreshed(issued), at: clock.now(), jitterDraw: 0))
        guard case .save(let next, ticket, .refreshed(issued)) = effects.first, effects.count == 1 else { throw Unexpected(effects) }
        #expect(next.refreshToken == "rt-2")
        #expect(account.machine.servableTokens?.idToken == nil, "nothing new is served before the keyring has it")

        let saved = account.apply(.persisted(ticket, answer: .refreshed(issued), next, .success(()), at: clock.now(), jitterDraw: 0))
        #expect(saved == [.noteKeyring(failed: nil), .tell(.refreshed(next, previous: TokenSet(refreshToken: "rt-1"), took: 2000)), .schedule, .wakeWaiters])
        #expect(account.machine.tokens == next)
        #expect(!account.unsaved)
    }

    /// A refresh that kept the refresh token is served at once: the keyring still holds a
    /// working refresh token, and the new ID token is written back later, coalesced.
    @Test func aRefreshThatKeptTheRefreshTokenIsServedAtOnceAndWrittenBackLater() throws {
        var account = account()
        let ticket = try started(&account)
        _ = clock.advance(by: 1)
        let issued = IssuedTokens(refreshToken: "rt-1", idToken: "id-2", expiresIn: 3600)
        let effects = account.apply(.refreshAnswered(ticket, .refreshed(issued), at: clock.now(), jitterDraw: 0))
        let held = try #require(account.machine.tokens)
        #expect(held.idToken == "id-2" && held.refreshToken == "rt-1")
        #expect(effects == [.deferWriteBack, .tell(.refreshed(held, previous: TokenSet(refreshToken: "rt-1"), took: 1000)), .schedule, .wakeWaiters])
        #expect(account.writeBackDeferred && !account.unsaved)
        // A session the user gives next is written in full: nothing is left to write back.
        _ = account.apply(.sessionGiven(TokenSet(refreshToken: "rt-9"), committing: nil, at: clock.now(), jitterDraw: 0))
        #expect(!account.writeBackDeferred)
    }

    @Test func aRotationTheKeyringRefusedIsServedAndMarkedUnsaved() throws {
        var account = account()
        let ticket = try started(&account)
        let answer = RefreshOutcome.refreshed(IssuedTokens(refreshToken: "rt-2", expiresIn: 3600))
        let effects = account.apply(.refreshAnswered(ticket, answer, at: clock.now(), jitterDraw: 0))
        guard case .save(let next, _, _) = effects.first else { throw Unexpected(effects) }
        let locked = KeyringFailure("locked")
        let saved = account.apply(.persisted(ticket, answer: answer, next, .failure(locked), at: clock.now(), jitterDraw: 0))
        #expect(saved.first == .noteKeyring(failed: locked))
        #expect(account.unsaved, "written back once the keyring answers")
        #expect(account.machine.tokens == next)
    }

    /// A rotation's write is in flight while an older session waits to be written back (the
    /// keyring was locked): the keyring poll must not write the older one meanwhile, or it could
    /// land last and put back the replaced refresh token (seen in a 30-minute chaos run).
    @Test func nothingIsWrittenBackWhileARotationIsBeingSaved() throws {
        var account = account()
        account.unsaved = true
        #expect(account.sessionToWriteBack == TokenSet(refreshToken: "rt-1"))
        let ticket = try started(&account)
        #expect(account.sessionToWriteBack == nil, "the refresh writes its own outcome")
        let answer = RefreshOutcome.refreshed(IssuedTokens(refreshToken: "rt-2", expiresIn: 3600))
        let effects = account.apply(.refreshAnswered(ticket, answer, at: clock.now(), jitterDraw: 0))
        guard case .save(let next, _, _) = effects.first else { throw Unexpected(effects) }
        #expect(account.machine.tokens?.refreshToken == "rt-1" && account.sessionToWriteBack == nil)
        _ = account.apply(.persisted(ticket, answer: answer, next, .failure(KeyringFailure("locked")), at: clock.now(), jitterDraw: 0))
        #expect(account.sessionToWriteBack == next, "the rotation the keyring refused is the one written back")
    }

    @Test func aRefusalEndsTheSessionAndDeletesOnlyTheRefreshTokenThatFailed() throws {
        var account = account()
        let ticket = try started(&account)
        let effects = account.apply(.refreshAnswered(ticket, .needsLogin(failure), at: clock.now(), jitterDraw: 0))
        #expect(effects == [.tell(.sessionEnded(failure, took: 0)), .schedule, .wakeWaiters, .deleteStored(ifRefreshToken: "rt-1")])
        guard case .needsLogin = account.machine.phase else { throw Unexpected(effects) }
    }

    /// The session the keyring never got is refused: nothing is left to write, and `status` must
    /// not call the logged-out account unsaved (found by AccountStateInvariantTests).
    @Test func aRefusedUnsavedSessionLeavesNothingUnsaved() throws {
        var account = account()
        account.unsaved = true
        let ticket = try started(&account)
        _ = account.apply(.refreshAnswered(ticket, .needsLogin(failure), at: clock.now(), jitterDraw: 0))
        #expect(account.machine.tokens == nil)
        #expect(!account.unsaved && !account.writeBackDeferred)
    }

    @Test func aRefusalDuringAPasswordChangeIsRetriedNotBelieved() throws {
        var account = account()
        account.passwordChangesInFlight = 1
        let ticket = try started(&account)
        let effects = account.apply(.refreshAnswered(ticket, .needsLogin(failure), at: clock.now(), jitterDraw: 0))
        guard case .refreshFailed(failure, let retryAt, 0) = effects.dropFirst().first.flatMap({ if case .tell(let news) = $0 { news } else { nil } }) else {
            throw Unexpected(effects)
        }
        #expect(effects == [.tell(.refusalDuringPasswordChange), .tell(.refreshFailed(failure, retryAt: retryAt, took: 0)), .schedule, .wakeWaiters])
        #expect(account.machine.tokens?.refreshToken == "rt-1")
    }

    @Test func anAnswerForAnOlderSessionIsDropped() throws {
        var account = account()
        let ticket = try started(&account)
        account.machine.install(TokenSet(refreshToken: "rt-imported"), jitterDraw: 0)  // an import while the refresh ran
        let effects = account.apply(.refreshAnswered(ticket, .refreshed(IssuedTokens(refreshToken: "rt-2")), at: clock.now(), jitterDraw: 0))
        #expect(effects == [.tell(.refreshOvertaken)])
        #expect(account.machine.tokens?.refreshToken == "rt-imported")
    }

    @Test func anAnswerForAnotherIncarnationChangesNothing() throws {
        var old = account(incarnation: 1)
        let ticket = try started(&old)
        var readded = account(incarnation: 2)
        #expect(readded.apply(.refreshAnswered(ticket, .needsLogin(failure), at: clock.now(), jitterDraw: 0)).isEmpty)
        #expect(readded.apply(.storedSessionRead(ticket, .success(nil), jitterDraw: 0)).isEmpty)
        #expect(readded.machine.tokens?.refreshToken == "rt-1")
    }

    @Test func aTimerThatFiresEarlySleepsAgain() throws {
        var account = account(tokens: TokenSet(refreshToken: "rt-1", idToken: "id", idTokenExpiresAt: clock.now().addingTimeInterval(3600), issuedAt: clock.now()))
        #expect(account.apply(.woke(at: clock.now())) == [.schedule])
        _ = clock.advance(by: 3600)
        guard case .callProvider = account.apply(.woke(at: clock.now())).last else { throw Unexpected([]) }
    }

    @Test func theFirstReadEndsTheWaitAndRestoresTheSession() throws {
        var account = account(tokens: nil)
        account.restoring = true
        account.machine.markKeyringUnreadable(TokendError(.unavailable, "not read yet"))
        let ticket = account.ticket()
        let stored = TokenSet(refreshToken: "rt-stored")
        let effects = account.apply(.storedSessionRead(ticket, .success(stored), jitterDraw: 0))
        #expect(effects == [.noteKeyring(failed: nil), .schedule, .wakeWaiters])
        #expect(!account.restoring)
        #expect(account.machine.tokens?.refreshToken == "rt-stored")
        #expect(account.machine.tokens?.endpoint == account.configuration.endpoint, "an unbound item adopts the endpoint it is read with")
    }

    /// A locked gnome-keyring (or one with no login keyring) answers a search, and finds nothing:
    /// that is no news of the keyring's state, which a status and the log would otherwise report
    /// as usable between two failed writes (issue 46).
    @Test func nothingStoredSaysNothingOfTheKeyring() {
        var account = account(tokens: nil)
        account.machine.markKeyringUnreadable(TokendError(.unavailable, "not read yet"))
        let effects = account.apply(.storedSessionRead(account.ticket(), .success(nil), jitterDraw: 0))
        #expect(effects == [.schedule, .wakeWaiters])
    }

    @Test func aLockedKeyringLeavesTheAccountWaitingForIt() {
        var account = account(tokens: nil)
        account.machine.markKeyringUnreadable(TokendError(.unavailable, "not read yet"))
        let locked = KeyringFailure("locked")
        let effects = account.apply(.storedSessionRead(account.ticket(), .failure(locked), jitterDraw: 0))
        #expect(effects == [.noteKeyring(failed: locked), .schedule, .wakeWaiters])
        guard case .awaitingKeyring = account.machine.phase else {
            Issue.record("a locked keyring is not an empty one: \(account.machine.phase)")
            return
        }
    }

    @Test func aSessionBoundToAnotherEndpointIsNotUsed() {
        var account = account(tokens: nil)
        var stored = TokenSet(refreshToken: "rt-prod")
        stored.endpoint = "https://securetoken.googleapis.com other-project"
        let effects = account.apply(.storedSessionRead(account.ticket(), .success(stored), jitterDraw: 0))
        #expect(effects.contains(.tell(.storedSessionBoundElsewhere)))
        #expect(account.machine.servableTokens == nil)
    }

    @Test func aReadThatAnImportOvertookIsDropped() {
        var account = account(tokens: nil)
        account.restoring = true
        let ticket = account.ticket()
        account.machine.install(TokenSet(refreshToken: "rt-imported"), jitterDraw: 0)
        #expect(account.apply(.storedSessionRead(ticket, .success(TokenSet(refreshToken: "rt-old")), jitterDraw: 0)) == [.tell(.readOvertaken), .wakeWaiters])
        #expect(!account.restoring)
        #expect(account.machine.tokens?.refreshToken == "rt-imported")
    }

    @Test func aNarrowedGrantStoresTheRotationFirstThenCachesTheTokenNotTheSession() throws {
        var account = account()
        let scope = TokenScope(scopes: ["read"])
        let effects = account.apply(.refreshWanted(force: false, narrowedTo: scope, requested: true, at: clock.now()))
        guard case .callProvider(let ticket) = effects.last, ticket.narrowedTo == scope, ticket.requested else { throw Unexpected(effects) }
        #expect(account.scopedTokens.inFlight == scope)
        _ = clock.advance(by: 1)
        let answer = RefreshOutcome.refreshed(IssuedTokens(refreshToken: "rt-2", accessToken: "narrow", expiresIn: 600, scopes: ["read"]))
        let answered = account.apply(.refreshAnswered(ticket, answer, at: clock.now(), jitterDraw: 0))
        guard case .save(let rotated, ticket, answer) = answered.first, answered.count == 1 else { throw Unexpected(answered) }
        #expect(rotated.refreshToken == "rt-2" && rotated.accessToken == nil, "only the refresh token rotates")
        #expect(account.scopedTokens.inFlight == nil)

        let saved = account.apply(.persisted(ticket, answer: answer, rotated, .success(()), at: clock.now(), jitterDraw: 0))
        guard case .tell(.grantMinted(scope, _, 1000)) = saved.dropFirst().first else { throw Unexpected(saved) }
        #expect(saved.suffix(2) == [.schedule, .wakeWaiters])
        #expect(account.machine.tokens?.refreshToken == "rt-2")
        #expect(account.machine.tokens?.accessToken == nil, "the narrowed token is not the session's")
        #expect(account.scopedTokens.entries[scope]?.token == "narrow")
    }

    @Test func aGrantTheProviderRefusesFailsOnlyThatScope() throws {
        var account = account()
        let scope = TokenScope(scopes: ["admin"])
        let effects = account.apply(.refreshWanted(force: false, narrowedTo: scope, requested: true, at: clock.now()))
        guard case .callProvider(let ticket) = effects.last else { throw Unexpected(effects) }
        let refused = account.apply(.refreshAnswered(ticket, .misconfigured(RefreshFailure(code: "invalid_scope", message: "no")), at: clock.now(), jitterDraw: 0))
        guard case .tell(.grantRefused(scope, _, 0)) = refused.first else { throw Unexpected(refused) }
        #expect(account.machine.phase == .idle, "the session is untouched")
        #expect(account.scopedTokens.refusal(of: scope, since: clock.now()) != nil)
    }

    @Test func anImportIsAUserActionThatTakesEffectAtOnceAndKeepsTheBackoff() throws {
        var account = account()
        let ticket = try started(&account)
        _ = account.apply(.refreshAnswered(ticket, .transient(failure, retryAfter: 60), at: clock.now(), jitterDraw: 0))
        guard case .backingOff(let until, _) = account.machine.phase else { throw Unexpected([]) }
        let imported = TokenSet(refreshToken: "rt-imported")
        #expect(account.apply(.sessionGiven(imported, committing: nil, at: clock.now(), jitterDraw: 0)) == [.disarm, .wakeWaiters])
        #expect(account.committedUserAction == 1 && account.issuedUserActions == 1)
        #expect(account.machine.tokens?.endpoint == account.configuration.endpoint)
        #expect(account.machine.backoff(at: clock.now()) == until, "a new session does not lift the provider's rate limit")
    }

    /// A fleet's session, after refreshes failed on the fleet's side: the backoff they earned
    /// was never the provider's, and ends (README, "A fleet").
    @Test func aSessionLiftingTheBackoffEndsIt() throws {
        var account = account()
        let ticket = try started(&account)
        _ = account.apply(.refreshAnswered(ticket, .transient(failure, retryAfter: 60), at: clock.now(), jitterDraw: 0))
        #expect(account.machine.backoff(at: clock.now()) != nil)
        _ = account.apply(.sessionGiven(TokenSet(refreshToken: "rt-fleet"), committing: nil, at: clock.now(), jitterDraw: 0, liftingBackoff: true))
        #expect(account.machine.backoff(at: clock.now()) == nil)
        #expect(account.machine.phase == .idle)
    }

    @Test func aLoginCommitsTheNumberItWasIssuedWith() {
        var account = account()
        account.issuedUserActions = 2  // the login (1), then a logout (2) issued while it ran
        let login = account.ticket(userAction: 1)
        _ = account.apply(.sessionForgotten(reason: "logged out", committing: nil))
        #expect(account.committedUserAction == 3)
        #expect(account.changes(since: login).contains(.overtaken), "the login's session must be dropped")
        _ = account.apply(.sessionGiven(TokenSet(refreshToken: "rt-login"), committing: account.ticket(userAction: 4), at: clock.now(), jitterDraw: 0))
        #expect(account.committedUserAction == 4)
    }

    /// "The user logs in while a refresh is in flight", as values: the login's session wins
    /// whichever answer comes first, and the refresh's rotated token never replaces it.
    @Test func aLoginRacingARefreshWins() throws {
        let login = TokenSet(refreshToken: "rt-login")
        let rotated = RefreshOutcome.refreshed(IssuedTokens(refreshToken: "rt-2"))

        // The login lands first: the refresh's answer is overtaken, nothing is saved or served.
        var first = account()
        let refresh = try started(&first)
        first.issuedUserActions += 1
        let loginTicket = first.ticket(userAction: first.issuedUserActions)
        _ = first.apply(.sessionGiven(login, committing: loginTicket, at: clock.now(), jitterDraw: 0))
        #expect(first.apply(.refreshAnswered(refresh, rotated, at: clock.now(), jitterDraw: 0)) == [.tell(.refreshOvertaken)])
        #expect(first.machine.tokens?.refreshToken == "rt-login")

        // The refresh lands first (its rotation on its way to the keyring): the login still wins,
        // and the write's late completion does not bring the refreshed session back.
        var second = account()
        let racing = try started(&second)
        second.issuedUserActions += 1
        let secondLogin = second.ticket(userAction: second.issuedUserActions)
        let answered = second.apply(.refreshAnswered(racing, rotated, at: clock.now(), jitterDraw: 0))
        guard case .save(let next, let saving, let answer) = answered.first else { throw Unexpected(answered) }
        #expect(next.refreshToken == "rt-2")
        _ = second.apply(.sessionGiven(login, committing: secondLogin, at: clock.now(), jitterDraw: 0))
        _ = second.apply(.persisted(saving, answer: answer, next, .success(()), at: clock.now(), jitterDraw: 0))
        #expect(second.machine.tokens?.refreshToken == "rt-login")
        #expect(second.changes(since: racing).contains(.session))
    }

    @Test func aStoredSessionIsUnsavedOnlyIfItIsStillTheHeldOne() {
        var account = account()
        let given = TokenSet(refreshToken: "rt-given")
        _ = account.apply(.sessionGiven(given, committing: nil, at: clock.now(), jitterDraw: 0))
        let held = account.machine.tokens!
        let locked = KeyringFailure("locked")
        #expect(account.apply(.sessionStored(held, .failure(locked))) == [.noteKeyring(failed: locked), .schedule])
        #expect(account.unsaved)
        _ = account.apply(.sessionGiven(TokenSet(refreshToken: "rt-newer"), committing: nil, at: clock.now(), jitterDraw: 0))
        _ = account.apply(.sessionStored(held, .failure(locked)))
        #expect(!account.unsaved, "the newer session's own write decides")
    }

    @Test func aForgottenSessionVoidsTheRefreshInFlight() throws {
        var account = account()
        let ticket = try started(&account)
        #expect(account.apply(.sessionForgotten(reason: "logged out", committing: nil)) == [.disarm, .wakeWaiters])
        #expect(account.machine.tokens == nil)
        #expect(account.apply(.refreshAnswered(ticket, .refreshed(IssuedTokens(refreshToken: "rt-2")), at: clock.now(), jitterDraw: 0)) == [.tell(.refreshOvertaken)])
    }

    @Test func lostScopesAreThoseANamedAnswerLeftOut() {
        #expect(AccountState.lostScopes(granted: ["openid", "read"], outcome: .refreshed(IssuedTokens(scopes: ["openid"]))) == ["read"])
        #expect(AccountState.lostScopes(granted: ["openid", "read"], outcome: .refreshed(IssuedTokens())).isEmpty, "an answer without scope keeps it")
        #expect(AccountState.lostScopes(granted: nil, outcome: .refreshed(IssuedTokens(scopes: ["openid"]))).isEmpty)
    }

    /// A reload is an input too: on the same endpoint the session stays and nothing is read again;
    /// pointed elsewhere, the held session is set aside (it was unsaved: the keyring still gets it),
    /// never sent there, and the stored one is read again.
    @Test func aReloadIsAnInput() {
        let firebase = Settings()
        var tokens = TokenSet(refreshToken: "rt-1")
        tokens.endpoint = firebase.endpoint
        var same = account(tokens: tokens)
        let longerMargin = Settings(refreshBefore: 600)
        #expect(same.apply(.reconfigured(longerMargin, provider: UncalledProvider())) == [.schedule, .wakeWaiters, .tell(.reconfigured)])
        #expect(same.machine.tokens == tokens && same.configuration == longerMargin)

        var moved = account(tokens: tokens)
        moved.unsaved = true
        let emulator = Settings(endpoint: "http://127.0.0.1:9099/securetoken.googleapis.com/v1/token k")
        #expect(emulator.endpoint != firebase.endpoint)
        let effects = moved.apply(.reconfigured(emulator, provider: UncalledProvider()))
        #expect(effects == [.tell(.repointed), .setAside(tokens), .schedule, .wakeWaiters, .tell(.reconfigured), .readStoredSession])
        #expect(moved.machine.tokens == nil && !moved.unsaved)
    }
}
