
/// A token handed to a caller.
public struct TokenGrant: Sendable, Equatable {
    public internal(set) var token: String
    public internal(set) var kind: TokenKind
    public internal(set) var expiresAt: Date

    public init(token: String, kind: TokenKind, expiresAt: Date) {
        self.token = token
        self.kind = kind
        self.expiresAt = expiresAt
    }
}

/// One `token` request as the account sees it each time it looks again.
public struct TokenWanted: Sendable {
    /// Nil: the account's default kind, as configured when it looks.
    public internal(set) var kind: TokenKind?
    /// Nil: the account's own token; else an access token narrowed to it (docs/architecture.md
    /// "Scoped tokens"), minted by a refresh grant that takes the account's refresh slot.
    public internal(set) var scope: TokenScope?
    public internal(set) var minValid: Double
    public internal(set) var start: Date
    public internal(set) var timeout: Double
    public var deadline: Date { start.addingTimeInterval(timeout) }
    /// A refusal for the API key's restrictions is retried once per request (`serve`).
    public internal(set) var triedBlockedKey = false

    public init(kind: TokenKind?, scope: TokenScope?, minValid: Double, start: Date, timeout: Double) {
        self.kind = kind
        self.scope = scope
        self.minValid = minValid
        self.start = start
        self.timeout = timeout
    }
}

/// What a `token` request does next (`AccountState.serve`).
public enum Serving: Equatable {
    /// Answer with `grant`; `promise`: until when the held token is promised to this caller
    /// (docs/architecture.md, "Promises"); `reschedule`: the account's timer now has more to do.
    case grant(TokenGrant, promise: Date?, reschedule: Bool)
    case fail(TokendError)
    /// Start a refresh (`force`: also during a misconfiguration), then look again on a change.
    case refresh(force: Bool)
    /// Look again when the account changes.
    case wait
}

extension AccountState {
    /// Why `wanted` can never be served by this account, if it cannot.
    func refusal(of wanted: TokenWanted) -> TokendError? {
        guard wanted.scope != nil else { return nil }
        guard configuration.narrowsTokens else {
            return Advice.cannotNarrow(kindName: configuration.kindName)
        }
        guard (wanted.kind ?? configuration.defaultTokenKind) == .access else {
            return Advice.onlyAccessTokensNarrow
        }
        return nil
    }

    /// What `wanted` gets now: a token valid for at least `minValid` seconds (never an expired
    /// one, never one wider than asked), a refusal, a refresh to start, or a wait. Each look asks
    /// afresh: a reload meanwhile may have changed what the account can serve. The one place a
    /// `token` request is decided: the machine only holds the session's phase and tokens.
    public mutating func serve(_ wanted: inout TokenWanted, at now: Date) -> Serving {
        if let refusal = refusal(of: wanted) { return .fail(refusal) }
        if let scope = wanted.scope { return narrowed(to: scope, wanted, at: now) }
        let kind = wanted.kind ?? configuration.defaultTokenKind
        let minValid = wanted.minValid
        switch machine.phase {
        case .needsLogin, .awaitingKeyring: return refused(machine.phaseError!, &wanted, at: now)
        default: break
        }
        if let (token, expiresAt) = machine.servableTokens?.token(kind, validFor: minValid, at: now, horizon: machine.servingHorizon) {
            return .grant(TokenGrant(token: token, kind: kind, expiresAt: expiresAt), promise: now.addingTimeInterval(max(0, minValid)), reschedule: false)
        }
        let tokens = machine.tokens
        // The last refresh issued no token of this kind: another would answer the same (re-learnt
        // at the account's own refresh), and at some providers it cancels what others hold.
        if machine.phaseError == nil, tokens?.issuedAt != nil, tokens?.token(kind) == nil {
            return refused(Advice.unsatisfiable(kind: kind, minValid: minValid, tokens: tokens, now: now), &wanted, at: now)
        }
        // What the last refresh taught: a fresh token cannot keep this promise either, so a
        // refresh (which cancels the token other clients hold, at some providers) would be waste.
        if machine.phaseError == nil, let span = machine.freshPromiseSpan, tokens?.token(kind) != nil, minValid > span {
            return refused(Advice.unsatisfiable(kind: kind, minValid: minValid, span: span, tokens: tokens), &wanted, at: now)
        }
        switch machine.phase {
        case .idle:
            // Tokens from a refresh sent since the request began that still cannot satisfy it are
            // final. One sent before, or answered after a forward step of the wall clock (its
            // tokens come back already dead by the stepped clock; ClockTests), is no answer to it.
            if let sent = tokens?.issuedAt, sent >= wanted.start, !machine.tokensCameAcrossAClockStep {
                return refused(Advice.unsatisfiable(kind: kind, minValid: minValid, tokens: tokens, now: now), &wanted, at: now)
            }
            return .refresh(force: false)
        case .refreshing:
            guard let (token, expiresAt) = machine.heldDespiteRefresh(kind, minValid: minValid, at: now, deadline: wanted.deadline) else { return .wait }
            return .grant(TokenGrant(token: token, kind: kind, expiresAt: expiresAt), promise: nil, reschedule: false)
        case .backingOff(let until, _):
            return waitForRetry(at: until, wanted, now: now)
        case .misconfigured, .needsLogin, .awaitingKeyring:
            return refused(machine.phaseError!, &wanted, at: now)
        }
    }

    /// A refusal, unless the API key's restrictions caused it or the keyring is still being read.
    private func refused(_ error: TokendError, _ wanted: inout TokenWanted, at now: Date) -> Serving {
        if !wanted.triedBlockedKey && isBlockedByKeyRestriction {
            // The key is fixed in the Cloud console, which tokend cannot see: each request
            // that needs a new token tries once, so the held session serves again unasked.
            wanted.triedBlockedKey = true
            return .refresh(force: true)
        }
        return restoring && now < wanted.deadline ? .wait : .fail(error)
    }

    /// A narrowed token from the cache, else a grant to start (or wait for) with the account's
    /// refresh token; refusals of this scope are remembered for the requests already waiting.
    private mutating func narrowed(to scope: TokenScope, _ wanted: TokenWanted, at now: Date) -> Serving {
        let generation = machine.generation
        if let granted = machine.tokens?.scopes {
            let missing = scope.notGranted(by: granted)
            guard missing.isEmpty else { return .fail(Advice.neverGranted(missing, granted: granted, account: configuration.name)) }
        }
        if let entry = scopedTokens.token(for: scope, generation: generation, minValid: wanted.minValid, at: now) {
            scopedTokens.noteUse(of: scope, at: now)
            // Its first use since it was minted makes it one the account's timer refreshes.
            return .grant(TokenGrant(token: entry.token, kind: .access, expiresAt: entry.expiresAt), promise: nil, reschedule: !entry.askedForSinceMinted)
        }
        if let refusal = scopedTokens.refusal(of: scope, since: wanted.start) { return .fail(refusal) }
        if let entry = scopedTokens.entries[scope], entry.generation == generation, entry.issuedAt >= wanted.start {
            // Minted during this request and still too short-lived for it.
            let minted = TokenSet(refreshToken: "", accessToken: entry.token, accessTokenExpiresAt: entry.expiresAt)
            return .fail(Advice.unsatisfiable(kind: .access, minValid: wanted.minValid, tokens: minted, now: now))
        }
        switch machine.phase {
        case .needsLogin, .misconfigured: return .fail(machine.phaseError!)
        case .awaitingKeyring(let error): return restoring && now < wanted.deadline ? .wait : .fail(error)
        case .backingOff(let until, _): return waitForRetry(at: until, wanted, now: now)
        case .idle: return .refresh(force: false)
        case .refreshing: return .wait  // the account's single flight: this grant starts once it is free
        }
    }

    /// During a backoff: a retry that is due starts (e.g. the machine slept through it); one
    /// past the request's deadline is the answer.
    private func waitForRetry(at retryAt: Date, _ wanted: TokenWanted, now: Date) -> Serving {
        if retryAt <= now { return .refresh(force: false) }
        if retryAt > wanted.deadline { return .fail(Advice.unavailable(lastError: machine.lastError, retryAt: retryAt)) }
        return .wait
    }
}
