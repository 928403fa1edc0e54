
/// What happens to an account that the engine hands to the account's own transition: a wish to
/// refresh, a timer's wake-up, or an answer to an operation the account started (its ticket).
/// The engine passes in the instant and the jitter draw; the transition reads neither itself.
public enum AccountInput<Configuration: AccountSettings, Provider: Sendable, Failure: StoredSessionFailure>: Sendable {
    /// Start a refresh now (`force`: also during a backoff or a misconfiguration), or with
    /// `scope` a grant narrowed to it; `requested`: a `token` request asked for that grant.
    case refreshWanted(force: Bool, narrowedTo: TokenScope?, requested: Bool, at: Date)
    /// The account's timer fired.
    case woke(at: Date)
    /// The provider answered the refresh (or narrowed grant) `ticket` started, `took` seconds
    /// after it was sent by the steady clock (`WallClock.steadySeconds`; nil: not measured).
    case refreshAnswered(AccountTicket, RefreshOutcome, at: Date, took: Double? = nil, jitterDraw: Double)
    /// The keyring answered the write of the session that `answer` brought (`.save`).
    case persisted(AccountTicket, answer: RefreshOutcome, TokenSet, Result<Void, Failure>, at: Date, jitterDraw: Double)
    /// The read of the stored session `ticket` started answered.
    case storedSessionRead(AccountTicket, Result<TokenSet?, Failure>, jitterDraw: Double)
    /// A session the user gave takes the account's place: an import, or a login's. The user action
    /// it is commits: `committing` (numbered when it was issued; the caller checked that nothing
    /// voided it meanwhile, `changes(since:)`), or with nil a new one that takes effect at once.
    /// Nothing refreshes the session before it is stored. `liftingBackoff`: the backoff it
    /// finds was not the provider's (a fleet's session, after etcd could not be reached), so it
    /// ends; else the new session waits it out too.
    case sessionGiven(TokenSet, committing: AccountTicket?, at: Date, jitterDraw: Double, liftingBackoff: Bool = false)
    /// The keyring answered the write of the held session: one the user gave, or a write-back.
    case sessionStored(TokenSet, Result<Void, Failure>)
    /// The session is forgotten, a user action that commits as `sessionGiven`'s does: a logout,
    /// or the user deleted at the provider.
    case sessionForgotten(reason: String, committing: AccountTicket?)
    /// A reload changed the account's configuration; `provider` is the one made for it.
    case reconfigured(Configuration, provider: Provider)
}

/// What the engine does after a transition, in the order given. The actor carries these out
/// and decides nothing about the account itself (AccountEngine+Actions.swift).
public enum AccountEffect<Failure: StoredSessionFailure>: Sendable, Equatable {
    /// Cancel the account's timer: a refresh in flight needs none.
    case disarm
    /// Arm the account's timer for its next wake-up (none if it wants none).
    case schedule
    /// Let every request waiting on the account look again.
    case wakeWaiters
    /// Ask the provider for new tokens (or for a token narrowed to `ticket.narrowedTo`) with the
    /// refresh token in `ticket.refresh`; the answer comes back as `.refreshAnswered`.
    case callProvider(AccountTicket)
    /// Write the session the provider's `answer` brought to the keyring; the keyring's answer
    /// comes back as `.persisted`.
    case save(TokenSet, AccountTicket, answer: RefreshOutcome)
    /// The held session's ID and access tokens are newer than the stored ones: queue the coalesced
    /// write-back (AccountEngine+WriteBack.swift).
    case deferWriteBack
    /// Delete the stored session if it still holds this refresh token.
    case deleteStored(ifRefreshToken: String)
    /// Tell the keyring's state tracking how an operation went (nil: it succeeded).
    case noteKeyring(failed: Failure?)
    /// Keep `TokenSet` for the keyring under the account's name though no account holds it any
    /// more: written before the account's next read, or by the keyring poll.
    case setAside(TokenSet)
    /// Read the stored session again (the account holds none now).
    case readStoredSession
    /// Tell the log and watchers.
    case tell(AccountNews)
}

/// What an account's transition has to say to the log and to watchers.
public enum AccountNews: Sendable, Equatable {
    case refreshed(TokenSet, previous: TokenSet?, took: Int)
    /// A refresh's answer granted fewer scopes than the session held (`lostScopes`).
    case scopesNarrowed([String])
    case refreshFailed(RefreshFailure, retryAt: Date, took: Int)
    case sessionEnded(RefreshFailure, took: Int)
    case misconfigured(RefreshFailure, took: Int)
    /// A down-scoped token was minted, or refused (by the provider or by us: never wider than asked).
    case grantMinted(TokenScope, expiresAt: Date, took: Int)
    case grantRefused(TokenScope, TokendError, took: Int)
    /// A refresh (or grant) answered after a newer session arrived.
    case refreshOvertaken
    /// A refresh was refused while an upgrade set the user's password: retried, not believed.
    case refusalDuringPasswordChange
    case storedSessionBoundElsewhere
    case storedSessionUnreadable
    /// A keyring read answered after the account's session changed.
    case readOvertaken
    case reconfigured
    /// Pointed at another endpoint: the held session is set aside, never sent there.
    case repointed
}

extension AccountState {
    /// The account's transition: its new state in place, and what the engine must do. Pure: no
    /// clock, no I/O; an input whose ticket some change voided since it was issued changes nothing
    /// (`changes(since:)`), so a stale answer is dropped here and nowhere else.
    public mutating func apply(_ input: AccountInput<Configuration, Provider, Failure>) -> [AccountEffect<Failure>] {
        // Only a held session waits for a write: one the machine dropped (refused, set aside,
        // forgotten) leaves none behind, or `status` would call a logged-out account unsaved.
        defer {
            if machine.tokens == nil {
                unsaved = false
                writeBackDeferred = false
            }
        }
        switch input {
        case .refreshWanted(let force, let scope, let requested, let now):
            return startRefresh(force: force, narrowedTo: scope, requested: requested, at: now)
        case .woke(let now):
            if RefreshScheduler.isDue(wake, machine: machine, at: now) {
                return startRefresh(force: false, narrowedTo: nil, requested: false, at: now)
            }
            // Else a narrowed token's proactive refresh, or an early wake (the clock moved back).
            guard machine.phase == .idle else { return [.schedule] }
            scopedTokens.prune(at: now, generation: machine.generation)
            guard let key = scopedTokens.due(at: now, generation: machine.generation, policy: machine.policy).first else { return [.schedule] }
            return startRefresh(force: false, narrowedTo: key, requested: false, at: now)
        case .refreshAnswered(let ticket, let outcome, let now, let took, let jitterDraw):
            return refreshAnswered(ticket, outcome, at: now, took: took, jitterDraw: jitterDraw)
        case .persisted(let ticket, let answer, let tokens, let saved, let now, let jitterDraw):
            guard changes(since: ticket).isDisjoint(with: .removed), ticket.isRefresh else { return [] }
            let failed = Self.failure(of: saved)
            if let scope = ticket.narrowedTo, let grant = Self.grant(answer, narrowedTo: scope) {
                return grantCompleted(ticket, scope, grant, keyring: .some(failed), at: now, jitterDraw: jitterDraw)
            }
            // The machine keeps the tokens the refresh replaces until it hears they were written.
            let previous = machine.tokens
            let completion = machine.persisted(ticket, tokens, at: now, jitterDraw: jitterDraw)
            if case .refreshed = completion {
                unsaved = failed != nil
                writeBackDeferred = false
            }
            var effects: [AccountEffect<Failure>] = [.noteKeyring(failed: failed)]
            if case .refreshed = completion {
                let lost = Self.lostScopes(granted: previous?.scopes, outcome: answer)
                if !lost.isEmpty { effects.append(.tell(.scopesNarrowed(lost))) }
            }
            return effects + completed(completion, refresh: ticket, previous: previous, at: now)
        case .storedSessionRead(let ticket, let loaded, let jitterDraw):
            return storedSessionRead(ticket, loaded, jitterDraw: jitterDraw)
        case .sessionGiven(var tokens, let action, let now, let jitterDraw, let liftingBackoff):
            // A new session does not lift the provider's rate limit: it waits out the backoff too.
            let backoff = liftingBackoff ? nil : machine.backoff(at: now)
            commit(action)
            tokens.endpoint = configuration.endpoint
            machine.install(tokens, jitterDraw: jitterDraw)
            if let backoff { machine.holdBackoff(until: backoff) }
            unsaved = false
            writeBackDeferred = false
            return [.disarm, .wakeWaiters]
        case .sessionStored(let tokens, let saved):
            let failed = Self.failure(of: saved)
            // Only if nothing newer arrived while the keyring wrote.
            if machine.tokens == tokens {
                unsaved = failed != nil
                if failed == nil { writeBackDeferred = false }
            }
            return [.noteKeyring(failed: failed), .schedule]
        case .sessionForgotten(let reason, let action):
            commit(action)
            machine.forget(reason: reason)
            unsaved = false
            writeBackDeferred = false
            return [.disarm, .wakeWaiters]
        case .reconfigured(let next, let provider):
            return reconfigure(next, provider: provider)
        }
    }

    /// Takes a reload's configuration: tokens minted under the old one are dropped, and a session
    /// bound to another endpoint is set aside (the keyring keeps it; with a provider that
    /// rotates, the stored refresh token may be dead already, so an unsaved one is still written).
    private mutating func reconfigure(_ next: Configuration, provider: Provider) -> [AccountEffect<Failure>] {
        configuration = next
        self.provider = provider
        scopedTokens = ScopedTokenCache()
        machine.policy = next.policy
        machine.clearMisconfiguration()
        var effects: [AccountEffect<Failure>] = []
        if let held = machine.tokens, held.endpoint != next.endpoint {
            machine.setAside(reason: Advice.boundElsewhere(stored: held.endpoint ?? "", account: next))
            effects.append(.tell(.repointed))
            if unsaved { effects.append(.setAside(held)) }
            unsaved = false
        }
        effects += [.schedule, .wakeWaiters, .tell(.reconfigured)]
        // Nothing held (set aside, or never loaded): the stored session may fit the new endpoint.
        if machine.tokens == nil { effects.append(.readStoredSession) }
        return effects
    }

    /// How a keyring write went, as `.noteKeyring` carries it (nil: it succeeded).
    public static func failure(of saved: Result<Void, Failure>) -> Failure? {
        guard case .failure(let error) = saved else { return nil }
        return error
    }

    /// Milliseconds since `refresh` went out, for the log and watchers.
    public static func took(_ refresh: AccountTicket, at now: Date) -> Int {
        Int(saturating: now.timeIntervalSince(refresh.startedAt ?? now) * 1000)
    }

    /// User actions take effect in the order they were issued: `action`'s number (or a new one)
    /// is the last committed from now on.
    private mutating func commit(_ action: AccountTicket?) {
        if let action {
            committedUserAction = action.userAction
        } else {
            issuedUserActions += 1
            committedUserAction = issuedUserActions
        }
    }

    private mutating func startRefresh(force: Bool, narrowedTo scope: TokenScope?, requested: Bool, at now: Date) -> [AccountEffect<Failure>] {
        guard let refresh = machine.startRefresh(ticket(narrowedTo: scope, requested: requested), at: now, force: force) else { return [] }
        if let scope { scopedTokens.inFlight = scope }
        return [.disarm, .wakeWaiters, .callProvider(refresh)]
    }

    private mutating func refreshAnswered(_ ticket: AccountTicket, _ outcome: RefreshOutcome, at now: Date, took: Double?, jitterDraw: Double) -> [AccountEffect<Failure>] {
        guard changes(since: ticket).isDisjoint(with: .removed), ticket.isRefresh else { return [] }
        if let scope = ticket.narrowedTo {
            if scopedTokens.inFlight == scope { scopedTokens.inFlight = nil }
            if let grant = Self.grant(outcome, narrowedTo: scope) {
                guard let next = machine.tokensAfterRotation(ticket, to: grant.issued.refreshToken) else {
                    return grantCompleted(ticket, scope, grant, keyring: nil, at: now, jitterDraw: jitterDraw)
                }
                // As after a refresh: the rotated refresh token is stored before anything is served.
                return [.save(next, ticket, answer: outcome)]
            }
            // A failure means for the session what it means after a refresh, and is handled so.
        }
        var effects: [AccountEffect<Failure>] = []
        var outcome = outcome
        if case .needsLogin(let failure) = outcome, passwordChangesInFlight > 0 {
            // The upgrade in flight voided this refresh token; its own answer decides. Should it
            // fail, the retry hears the verdict again.
            effects.append(.tell(.refusalDuringPasswordChange))
            outcome = .transient(failure, retryAfter: nil)
        }
        let previous = machine.tokens
        let completion = machine.finish(ticket, outcome, at: now, took: took, jitterDraw: jitterDraw)
        if case .persist(let next) = completion {
            guard next.refreshToken == ticket.refreshToken else {
                // A rotated refresh token reaches the keyring before anyone is handed the new
                // tokens: a crash from here on cannot leave the keyring with a superseded one.
                return effects + [.save(next, ticket, answer: outcome)]
            }
            // The stored refresh token still works: the new tokens are served now and written
            // back coalesced, as gnome-keyring rewrites its whole file on every store.
            let completion = machine.persisted(ticket, next, at: now, jitterDraw: jitterDraw)
            if case .refreshed = completion {
                writeBackDeferred = true
                effects.append(.deferWriteBack)
                let lost = Self.lostScopes(granted: previous?.scopes, outcome: outcome)
                if !lost.isEmpty { effects.append(.tell(.scopesNarrowed(lost))) }
            }
            return effects + completed(completion, refresh: ticket, previous: previous, at: now)
        }
        return effects + completed(completion, refresh: ticket, previous: previous, at: now)
    }

    /// A narrowed grant's answer that counts as a success: new tokens, or a refusal of this scope
    /// or audience, which says nothing against the refresh token (a success that minted nothing,
    /// and only the requests for this key fail). Nil: a failure to handle as a refresh's.
    public struct GrantAnswer {
        public internal(set) var issued: IssuedTokens
        public internal(set) var refusal: TokendError?
    }

    /// OAuth errors that refuse one narrowed grant, not the session or the client: the scope is
    /// not the grant's (RFC 6749 §5.2) or the audience is not one the provider serves (RFC 8707).
    /// Computed: a generic type cannot hold a static stored property.
    public static var scopeRefusals: Set<String> { ["invalid_scope", "invalid_target"] }

    /// Why a successful narrowed answer is not served: no access token, or a scope wider than
    /// asked (a provider that ignores `scope` on refresh); nil when it is what was asked.
    public static func refusal(of issued: IssuedTokens, asked scope: TokenScope) -> TokendError? {
        guard issued.accessToken != nil else {
            return Advice.grantWithoutAccessToken(scope)
        }
        // RFC 6749 §5.1: an answer without `scope` was granted the scope asked for.
        guard !scope.scopes.isEmpty, let granted = issued.scopes else { return nil }
        let wider = Set(granted).subtracting(scope.scopes).sorted()
        guard !wider.isEmpty else { return nil }
        return Advice.grantWider(scope, also: wider)
    }

    public static func grant(_ outcome: RefreshOutcome, narrowedTo scope: TokenScope) -> GrantAnswer? {
        switch outcome {
        case .refreshed(let issued):
            return GrantAnswer(issued: issued, refusal: Self.refusal(of: issued, asked: scope))
        case .misconfigured(let failure) where Self.scopeRefusals.contains(failure.code):
            return GrantAnswer(issued: IssuedTokens(), refusal: Advice.grantRefused(scope, failure))
        default:
            return nil
        }
    }

    /// A grant is over: the session takes the rotated refresh token (if any; `keyring`: how its
    /// write went, when there was one) and the scoped cache the minted token or the refusal.
    private mutating func grantCompleted(
        _ ticket: AccountTicket, _ scope: TokenScope, _ grant: GrantAnswer, keyring: Failure??, at now: Date, jitterDraw: Double
    ) -> [AccountEffect<Failure>] {
        guard let presented = ticket.refreshToken, let startedAt = ticket.startedAt else { return [] }
        var effects: [AccountEffect<Failure>] = keyring.map { [.noteKeyring(failed: $0)] } ?? []
        guard case .refreshed = machine.finishScopedGrant(ticket, .refreshed(grant.issued), at: now, jitterDraw: jitterDraw) else {
            return effects + [.tell(.refreshOvertaken)]
        }
        if let keyring { unsaved = keyring != nil }
        let took = Self.took(ticket, at: now)
        if let refusal = grant.refusal {
            scopedTokens.refuse(scope, refusal, at: now)
            effects.append(.tell(.grantRefused(scope, refusal, took: took)))
        } else if let minted = TokenSet(refreshToken: presented).merging(grant.issued, sentAt: startedAt, at: now).token(.access) {
            scopedTokens.store(
                minted.value, expiresAt: minted.expiresAt, issuedAt: startedAt, for: scope, generation: machine.generation,
                requested: ticket.requested, at: now)
            effects.append(.tell(.grantMinted(scope, expiresAt: minted.expiresAt, took: took)))
        }
        return effects + [.schedule, .wakeWaiters]
    }

    /// What a finished refresh asks for; `previous`: the tokens it replaced.
    private func completed(
        _ completion: AccountMachine.Completion, refresh: AccountTicket, previous: TokenSet?, at now: Date
    ) -> [AccountEffect<Failure>] {
        let took = Self.took(refresh, at: now)
        switch completion {
        case .stale, .persist:
            return [.tell(.refreshOvertaken)]
        case .refreshed(let tokens):
            return [.tell(.refreshed(tokens, previous: previous, took: took)), .schedule, .wakeWaiters]
        case .willRetry(let failure, let retryAt):
            return [.tell(.refreshFailed(failure, retryAt: retryAt, took: took)), .schedule, .wakeWaiters]
        case .loggedOut(let failure, let refreshToken):
            // Only if it is still the refresh token that failed: an import may have replaced it.
            return [.tell(.sessionEnded(failure, took: took)), .schedule, .wakeWaiters, .deleteStored(ifRefreshToken: refreshToken)]
        case .misconfigured(let failure):
            return [.tell(.misconfigured(failure, took: took)), .schedule, .wakeWaiters]
        }
    }

    /// Scopes the session held that a refresh's answer no longer grants: the provider gave a
    /// rotated refresh token a narrowed scope (against RFC 6749 §6; django-oauth-toolkit does
    /// after a scoped grant). Only a new login widens it again; an answer without `scope` keeps it.
    public static func lostScopes(granted: [String]?, outcome: RefreshOutcome) -> [String] {
        guard case .refreshed(let issued) = outcome, let granted, let answered = issued.scopes else { return [] }
        return Set(granted).subtracting(answered).sorted()
    }

    private mutating func storedSessionRead(_ ticket: AccountTicket, _ loaded: Result<TokenSet?, Failure>, jitterDraw: Double) -> [AccountEffect<Failure>] {
        guard changes(since: ticket).isDisjoint(with: .removed) else { return [] }
        // Only this incarnation's read ends its wait: a re-added account has a read of its own.
        restoring = false
        guard changes(since: ticket).isDisjoint(with: .session) else { return [.tell(.readOvertaken), .wakeWaiters] }
        var effects: [AccountEffect<Failure>] = []
        switch loaded {
        case .success(var tokens?):
            if let bound = tokens.endpoint, bound != configuration.endpoint {
                machine.markBoundElsewhere(reason: Advice.boundElsewhere(stored: bound, account: configuration))
                effects.append(.tell(.storedSessionBoundElsewhere))
            } else {
                // An item from before sessions were bound adopts the endpoint it is first read with.
                tokens.endpoint = configuration.endpoint
                machine.restore(tokens, jitterDraw: jitterDraw)
            }
            effects.append(.noteKeyring(failed: nil))
        case .success(nil):
            // Says nothing of the keyring's state: a locked gnome-keyring (or one with no login
            // keyring yet) answers a search too. Were it taken for `available`, a locked keyring
            // would read as usable again between two failed writes (issue 46); the poll's
            // probe of the login collection says when it is.
            machine.markNothingStored()
        case .failure(let error) where error.isCorrupt:
            // The keyring answered; the item will read the same next time. Said once, not polled.
            machine.markUnreadableItem(reason: error.tokendError(account: configuration.name).message)
            effects += [.noteKeyring(failed: nil), .tell(.storedSessionUnreadable)]
        case .failure(let error):
            // Locked is not empty: the account waits for the keyring instead of asking for a login.
            machine.markKeyringUnreadable(error.tokendError(account: configuration.name))
            effects.append(.noteKeyring(failed: error))
        }
        return effects + [.schedule, .wakeWaiters]
    }
}
