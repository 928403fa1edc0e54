/// One account's session as a state machine: pure, clocked from outside, no I/O.
///
/// The daemon asks it what to do (serve, refresh, wait, refuse) and tells it what happened
/// (a refresh outcome, an import, a logout). Every refresh carries the `generation` it started
/// in, so a slow refresh that finishes after a logout or a new import is recognised as stale and
/// can never write over the newer session (pizauth's versioned `AccountId`).
struct AccountMachine: Sendable {
    public enum Phase: Sendable, Equatable {
        /// Holding tokens (or nothing yet); the next refresh is on schedule.
        case idle
        /// A refresh is in flight; everyone who needs fresh tokens waits for it (single flight).
        case refreshing(since: Date)
        /// The last `attempt + 1` refreshes failed transiently; the next try is at `until`.
        case backingOff(until: Date, attempt: Int)
        /// The provider revoked the session, or there never was one.
        case needsLogin(reason: String)
        /// The provider says the account's configuration is wrong.
        case misconfigured(reason: String)
        /// The keyring could not be read yet (locked, or no Secret Service): we do not know whether
        /// a session exists, and must not claim that none does.
        case awaitingKeyring(TokendError)
    }

    /// What finishing a refresh means for the outside world.
    public enum Completion: Sendable, Equatable {
        /// The ticket belonged to an older session: drop the result on the floor.
        case stale
        /// New tokens to write to the keyring before anyone is handed them: a crash after the
        /// provider rotated the refresh token must not leave a superseded one stored. Tell the
        /// machine `persisted` afterwards (whether the write succeeded or not).
        case persist(TokenSet)
        /// New tokens, now served; announce them.
        case refreshed(TokenSet)
        /// Keep everything, retry at `retryAt`.
        case willRetry(RefreshFailure, retryAt: Date)
        /// Forget the session; delete the stored refresh token if it is still `refreshToken`.
        case loggedOut(RefreshFailure, refreshToken: String)
        case misconfigured(RefreshFailure)
    }

    public private(set) var tokens: TokenSet?
    public private(set) var phase: Phase
    public private(set) var generation: UInt64 = 0
    public private(set) var lastRefresh: Date?
    public private(set) var lastError: RefreshFailure?
    /// Consecutive transient failures.
    public private(set) var failures = 0
    var policy: RefreshPolicy
    /// The jitter draw for the current tokens, fixed when they arrive so the schedule is stable.
    private var jitterDraw: Double = 0
    /// The provider answered the refresh in flight and its tokens are being written to the
    /// keyring (`.persist`): the held token is served again within its own horizon meanwhile.
    private var persisting = false
    /// The refresh being persisted, and the one that brought the held tokens, was answered after
    /// a forward step of the wall clock: what its tokens cannot satisfy, the next refresh may.
    private var answerCameAcrossAClockStep = false
    private(set) var tokensCameAcrossAClockStep = false

    public init(policy: RefreshPolicy = RefreshPolicy(), tokens: TokenSet? = nil, jitterDraw: Double = 0) {
        self.policy = policy
        self.tokens = tokens
        self.jitterDraw = jitterDraw
        self.phase = tokens == nil ? .needsLogin(reason: AccountMachine.noSessionReason) : .idle
    }

    static let noSessionReason = Advice.noSessionStored
    /// Proactive refreshes are at least this far apart (found by the fuzzer, docs/fuzzing.md):
    /// far below any real token's life, so only a provider misbehaving ever meets it.
    public static let minimumRefreshInterval: Double = 1

    // MARK: - Asking

    /// The window of the next proactive refresh: when idle with tokens whose expiry is known.
    public var proactiveWindow: RefreshWindow? {
        guard case .idle = phase, let tokens, let expiresAt = tokens.expiresAt else { return nil }
        return policy.window(expiresAt: expiresAt, issuedAt: tokens.issuedAt, jitterDraw: jitterDraw)
    }

    /// When the account next wants the scheduler's attention; nil when nothing is scheduled.
    public var nextWake: Date? {
        switch phase {
        case .idle:
            guard tokens != nil else { return nil }
            // Nothing but a refresh token: refresh at once.
            let due = proactiveWindow?.desired ?? .distantPast
            // Tokens dead on arrival (a lifetime of a second or less) would make that "at once"
            // again, in a tight loop against the provider: one proactive refresh a second at most.
            guard let lastRefresh else { return due }
            return max(due, lastRefresh.addingTimeInterval(Self.minimumRefreshInterval))
        case .backingOff(let until, _):
            return until
        case .refreshing, .needsLogin, .misconfigured, .awaitingKeyring:
            return nil
        }
    }

    /// When a backoff ends, if the account is backing off until after `now`: the provider's wish
    /// (a `Retry-After`) or ours, which no client request may override.
    public func backoff(at now: Date) -> Date? {
        guard case .backingOff(let until, _) = phase, until > now else { return nil }
        return until
    }

    /// Whether a wake-up at `now` should start a refresh. Asked of the wall clock every time,
    /// so a timer that slept through a suspend still sees the truth.
    public func isRefreshDue(at now: Date) -> Bool {
        guard let wake = nextWake else { return false }
        return wake <= now
    }

    /// The latest instant a promise made now may end (docs/architecture.md, "Promises"): while
    /// idle, the un-jittered proactive refresh instant `expires_at − margin`, so promises never
    /// hold a refresh past its margin; while a refresh is in flight, none (it may cancel the held
    /// token at the provider); otherwise (a backoff) nil: the token's own expiry bounds it.
    /// While the keyring writes a refreshed session (milliseconds; up to its deadline when the
    /// Secret Service is frozen) the held token is served within its own horizon, as the design
    /// keeps serving from memory: at a provider that revokes on refresh it may be dead already.
    public var servingHorizon: Date? {
        switch phase {
        case .idle:
            return idleHorizon
        case .refreshing:
            return persisting ? idleHorizon : .distantPast
        case .backingOff, .needsLogin, .misconfigured, .awaitingKeyring: return nil
        }
    }

    /// How long requests wait for a refresh in flight before they take the held token after all:
    /// a refresh answers in well under a second (django-oauth-toolkit in 60–400 ms on CI's loaded
    /// machine), so one that takes 3 s is likely hanging, and the design keeps serving the held
    /// token through transient failures.
    public static let refreshPatience: Double = 3

    /// The held token despite a refresh in flight, once the refresh has taken longer than
    /// `refreshPatience` or the request's `deadline` has come: the one case a promise may not hold
    /// at a provider that revokes on refresh (docs/architecture.md, "Promises").
    public func heldDespiteRefresh(_ kind: TokenKind, minValid: Double, at now: Date, deadline: Date) -> (value: String, expiresAt: Date)? {
        guard let patienceEnds = refreshPatienceEnds(deadline: deadline), now >= patienceEnds else { return nil }
        return tokens?.token(kind, validFor: minValid, at: now)
    }

    /// When a request waiting for the refresh in flight stops waiting (nil: none is in flight).
    public func refreshPatienceEnds(deadline: Date) -> Date? {
        guard case .refreshing(let since) = phase else { return nil }
        return min(deadline, since.addingTimeInterval(Self.refreshPatience))
    }

    /// `expires_at − margin`: the proactive refresh's instant before jitter and spreading.
    private var idleHorizon: Date? {
        guard let tokens, let expiresAt = tokens.expiresAt else { return nil }
        return expiresAt.addingTimeInterval(-policy.margin(expiresAt: expiresAt, issuedAt: tokens.issuedAt))
    }

    /// The longest `min_valid` a fresh refresh can promise, as the last refresh taught it (the
    /// provider's lifetime less the margin); nil when the lifetime is unknown. Learnt again at
    /// every refresh, never by one of its own.
    public var freshPromiseSpan: Double? {
        guard let tokens, let issuedAt = tokens.issuedAt, let expiresAt = tokens.expiresAt else { return nil }
        return expiresAt.timeIntervalSince(issuedAt) - policy.margin(expiresAt: expiresAt, issuedAt: issuedAt)
    }

    /// The tokens a request may be handed when they are valid long enough: none while the account
    /// needs a login or waits for its keyring. `AccountState.serve` and the daemon's held-token table use it.
    public var servableTokens: TokenSet? {
        switch phase {
        case .needsLogin, .awaitingKeyring: nil
        default: tokens
        }
    }

    /// How a refresh that a request forced (or joined) went, once none is in flight: the new
    /// expiry if one finished since `requestStart`, else why not (`backingOff` words a backoff).
    public func refreshOutcome(since requestStart: Date, backingOff: (Date) -> TokendError) -> Result<Date?, TokendError> {
        if let lastRefresh, lastRefresh >= requestStart { return .success(tokens?.expiresAt) }
        if let phaseError { return .failure(phaseError) }
        if case .backingOff(let until, _) = phase { return .failure(backingOff(until)) }
        return .failure(Advice.refreshIncomplete)
    }

    // MARK: - Telling

    /// Starts a refresh now unless one is in flight or there is no session to refresh.
    /// `force` ignores a backoff or a configuration error (an explicit `refresh` request).
    /// The ticket is `base` (the account's, for the engine) with the refresh's own fields: the
    /// generation it belongs to, the refresh token to present and when it went out.
    public mutating func startRefresh(_ base: AccountTicket = AccountTicket(), at now: Date, force: Bool = false) -> AccountTicket? {
        guard let tokens else { return nil }
        switch phase {
        case .idle: break
        case .backingOff(let until, _): guard force || until <= now else { return nil }
        case .misconfigured: guard force else { return nil }
        case .refreshing, .needsLogin, .awaitingKeyring: return nil
        }
        phase = .refreshing(since: now)
        persisting = false
        var ticket = base
        ticket.generation = generation
        ticket.refreshToken = tokens.refreshToken
        ticket.startedAt = now
        return ticket
    }

    /// The token set a successful refresh would produce, without applying it: the daemon writes
    /// it to the keyring before the machine starts serving it. Nil when the ticket is stale.
    public func tokensAfter(_ ticket: AccountTicket, _ issued: IssuedTokens, at now: Date) -> TokenSet? {
        guard ticket.generation == generation, let sentAt = ticket.startedAt, case .refreshing = phase, let tokens else { return nil }
        return tokens.merging(issued, sentAt: sentAt, at: now)
    }

    /// Records a refresh's outcome. `jitterDraw` is a fresh random draw in [0, 1) for jitter. New
    /// tokens are not served yet: the answer is `.persist`, and `persisted` serves them. `took`:
    /// how long the refresh took by the steady clock, if measured.
    public mutating func finish(_ ticket: AccountTicket, _ outcome: RefreshOutcome, at now: Date, took: Double? = nil, jitterDraw: Double) -> Completion {
        guard ticket.generation == generation, let presented = ticket.refreshToken, case .refreshing = phase else { return .stale }
        switch outcome {
        case .refreshed(let issued):
            guard let next = tokensAfter(ticket, issued, at: now) else { return .stale }
            // Their expiry counts from the wall clock's sending instant (ForwardClock: a token may
            // look older than it is, never younger); a step since makes them look dead on arrival.
            answerCameAcrossAClockStep = took.map { now.timeIntervalSince(ticket.startedAt ?? now) - $0 > Self.clockStepTolerance } ?? false
            persisting = true
            return .persist(next)
        case .transient(let failure, let retryAfter):
            let delay = Backoff().delay(attempt: failures, jitterDraw: jitterDraw, retryAfter: retryAfter)
            let until = now.addingTimeInterval(delay)
            phase = .backingOff(until: until, attempt: failures)
            failures += 1
            lastError = failure
            return .willRetry(failure, retryAt: until)
        case .needsLogin(let failure):
            tokens = nil
            phase = .needsLogin(reason: "the provider ended the session (\(failure.summary))")
            lastError = failure
            generation += 1
            return .loggedOut(failure, refreshToken: presented)
        case .misconfigured(let failure):
            phase = .misconfigured(reason: failure.summary)
            lastError = failure
            return .misconfigured(failure)
        }
    }

    /// The session after a grant that minted a down-scoped token rotated the refresh token, or
    /// nil when it did not rotate (or the ticket is stale): only the refresh token changes, the
    /// session's own tokens stay. The daemon writes it to the keyring first, as for a refresh.
    public func tokensAfterRotation(_ ticket: AccountTicket, to refreshToken: String?) -> TokenSet? {
        guard ticket.generation == generation, case .refreshing = phase, var tokens, let refreshToken,
            refreshToken != tokens.refreshToken
        else { return nil }
        tokens.refreshToken = refreshToken
        return tokens
    }

    /// Records the outcome of a grant that minted a down-scoped token with the session's refresh
    /// token: a success only takes a rotated refresh token (the session's own tokens and refresh
    /// schedule stay); a failure says what it says about the refresh token, as for a refresh.
    public mutating func finishScopedGrant(_ ticket: AccountTicket, _ outcome: RefreshOutcome, at now: Date, jitterDraw: Double) -> Completion {
        guard case .refreshed(let issued) = outcome else { return finish(ticket, outcome, at: now, jitterDraw: jitterDraw) }
        guard ticket.generation == generation, case .refreshing = phase, let held = tokens else { return .stale }
        tokens = tokensAfterRotation(ticket, to: issued.refreshToken) ?? held
        phase = .idle
        failures = 0
        lastError = nil
        return .refreshed(tokens ?? held)
    }

    /// The wall clock ran this much ahead of the steady clock during a refresh: a step, not a
    /// slew (adjtime slews at most 0.5 ms a second, so a refresh within its deadlines drifts by
    /// milliseconds).
    public static let clockStepTolerance: Double = 1

    /// The keyring write of a `.persist` is over (whatever its result: a locked keyring keeps
    /// the session in memory): the new tokens are served from now on, unless the ticket went
    /// stale while the keyring answered.
    public mutating func persisted(_ ticket: AccountTicket, _ next: TokenSet, at now: Date, jitterDraw: Double) -> Completion {
        guard ticket.generation == generation, case .refreshing = phase else { return .stale }
        tokens = next
        tokensCameAcrossAClockStep = answerCameAcrossAClockStep
        phase = .idle
        persisting = false
        failures = 0
        lastError = nil
        lastRefresh = now
        self.jitterDraw = jitterDraw
        return .refreshed(next)
    }

    /// A new session from an import or a login: wins over anything in flight.
    public mutating func install(_ tokens: TokenSet, jitterDraw: Double) {
        self.tokens = tokens
        tokensCameAcrossAClockStep = false
        generation += 1
        phase = .idle
        failures = 0
        lastError = nil
        self.jitterDraw = jitterDraw
    }

    /// An imported session that arrives during a backoff: held, but not refreshed before `until`.
    public mutating func holdBackoff(until: Date) {
        guard tokens != nil, case .idle = phase else { return }
        phase = .backingOff(until: until, attempt: 0)
        failures = 1
    }

    /// Loads what the keyring held at start (no generation bump: nothing can be in flight yet).
    public mutating func restore(_ tokens: TokenSet, jitterDraw: Double) {
        guard self.tokens == nil else { return }
        install(tokens, jitterDraw: jitterDraw)
    }

    /// The keyring could not be read at start: say so instead of "no session".
    public mutating func markKeyringUnreadable(_ error: TokendError) {
        guard tokens == nil else { return }
        switch phase {
        case .needsLogin(AccountMachine.noSessionReason), .awaitingKeyring: phase = .awaitingKeyring(error)
        default: break
        }
    }

    /// The keyring answered with an item tokend cannot read: nothing to serve or refresh, and
    /// reading it again will not help, so the account waits for a new session (`reason` says
    /// how to get one) instead of retrying the load.
    public mutating func markUnreadableItem(reason: String) {
        guard tokens == nil else { return }
        switch phase {
        case .needsLogin(AccountMachine.noSessionReason), .awaitingKeyring: phase = .needsLogin(reason: reason)
        default: break
        }
    }

    /// The stored session belongs to another endpoint than the one configured: nothing may be
    /// sent with it, so nothing is held, and `reason` says how to resolve it.
    public mutating func markBoundElsewhere(reason: String) {
        guard tokens == nil else { return }
        phase = .misconfigured(reason: reason)
    }

    /// The configuration moved the account to another endpoint: the session held now may not go
    /// there, so it is set aside (it stays in the keyring) and anything in flight becomes stale.
    public mutating func setAside(reason: String) {
        tokens = nil
        generation += 1
        phase = .misconfigured(reason: reason)
    }

    /// The keyring answered and holds nothing for this account.
    public mutating func markNothingStored() {
        if case .awaitingKeyring = phase { phase = .needsLogin(reason: Self.noSessionReason) }
    }

    /// A logout: forget the session; anything in flight becomes stale.
    public mutating func forget(reason: String) {
        tokens = nil
        generation += 1
        phase = .needsLogin(reason: reason)
    }

    /// A configuration change or an explicit request clears a configuration error.
    public mutating func clearMisconfiguration() {
        if case .misconfigured = phase { phase = tokens == nil ? .needsLogin(reason: Self.noSessionReason) : .idle }
    }
}

extension AccountMachine {
    /// The state name shown by `status` and `list` (docs/protocol.md).
    public func stateName(at now: Date) -> String {
        let names = stateNames
        return names.changesAt.map { $0 > now } == true ? names.live : names.expired
    }

    /// The state name without the clock: `live` while the tokens last (until `changesAt`, their
    /// expiry, for the states where it matters), `expired` from then on or when there is no
    /// expiry. Lets a count of states be kept as machines change instead of recomputed.
    public var stateNames: (live: String, expired: String, changesAt: Date?) {
        switch phase {
        case .idle: ("active", "stale", tokens?.expiresAt)
        case .refreshing: ("refreshing", "refreshing", nil)
        case .backingOff: ("retrying", "unavailable", tokens?.expiresAt)
        case .needsLogin: ("needs_login", "needs_login", nil)
        case .misconfigured: ("config_error", "config_error", nil)
        case .awaitingKeyring: ("waiting_for_keyring", "waiting_for_keyring", nil)
        }
    }
}

extension AccountMachine {
    /// The error a phase alone answers every request with, nil when the phase can still serve or
    /// refresh: the one mapping from phase to error.
    public var phaseError: TokendError? {
        switch phase {
        case .needsLogin(let reason): TokendError(.needsLogin, reason)
        case .misconfigured(let reason): TokendError(.configError, reason)
        case .awaitingKeyring(let error): error
        case .idle, .refreshing, .backingOff: nil
        }
    }
}
