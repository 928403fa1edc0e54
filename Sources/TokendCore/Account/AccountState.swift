
/// What an account's state reads of its configuration. The daemon's `AccountConfiguration`
/// (TokendServer) is one; the state never sees a provider's settings beyond these.
public protocol AccountSettings: Sendable, Equatable {
    var name: String { get }
    /// Where the account's sessions come from: a session is bound to the endpoint that issued it.
    var endpoint: String { get }
    var policy: RefreshPolicy { get }
    /// The provider can mint access tokens narrowed to a scope or an audience.
    var narrowsTokens: Bool { get }
    /// The kind of token a request gets when it names none.
    var defaultTokenKind: TokenKind { get }
    /// The provider's kind as the config file names it (`firebase`, `oidc`), for messages.
    var kindName: String { get }
}

/// How a keyring operation failed, as the account's state reads it: the daemon's `KeyringError`
/// (TokendKeyring) is one. Generic here so that the state needs no keyring to be tested.
public protocol StoredSessionFailure: Error, Sendable, Equatable {
    /// The item exists but is no session tokend can read: it reads the same next time.
    var isCorrupt: Bool { get }
    /// What a client is told, naming the account's item.
    func tokendError(account: String?) -> TokendError
}

/// One account as the engine holds it: its configuration, its `AccountMachine` and what the
/// engine tracks beside it. A value: every change goes through its transition
/// (AccountTransitions.swift) or one of the user-action steps below; the engine only stores it
/// (docs/architecture.md, "The engine"): the fields are `internal(set)` and the machine internal,
/// so the compiler keeps every write in this module. Generic over what lives outside the core: the daemon's
/// configuration, its provider and its keyring's failures (TokendServer names the one it uses).
public struct AccountState<Configuration: AccountSettings, Provider: Sendable, Failure: StoredSessionFailure>: Sendable {
    public internal(set) var configuration: Configuration
    /// The session's state machine: the core's own; the engine reads the account (below), never it.
    var machine: AccountMachine
    /// The provider made for `configuration`: the state only keeps it (the engine calls it).
    public internal(set) var provider: Provider
    /// The session in memory has not reached the keyring yet (it was locked or unavailable
    /// when we wrote): written back as soon as the keyring answers again.
    public internal(set) var unsaved = false
    /// The keyring holds this session's refresh token but older ID and access tokens: a
    /// refresh that did not rotate the refresh token is served at once and written back
    /// later, coalesced (AccountEngine+WriteBack.swift).
    public internal(set) var writeBackDeferred = false
    /// Unique across the engine's life: an account removed and added again by reloads is a
    /// new incarnation, so a refresh or a keyring read begun for the old one can never be
    /// applied to the new one (its machine's generations start over).
    public internal(set) var incarnation: UInt64
    /// Set while a browser, device or Google login runs: one interactive login at a time.
    var interactiveLogin = false
    /// User actions (login, import, logout, delete, upgrade) are numbered as they are issued;
    /// a login's session is installed only if no later-issued action has committed yet, so
    /// the newest choice of the user wins whatever order the providers answer in.
    var issuedUserActions: UInt64 = 0
    var committedUserAction: UInt64 = 0
    /// Upgrades setting a password now in flight. Setting a password voids the user's older
    /// refresh tokens (Firebase's `validSince`), so a refresh answered `TOKEN_EXPIRED`
    /// meanwhile is no verdict on the account: the upgrade's answer brings the new session.
    var passwordChangesInFlight = 0
    /// The stored session is being read for the first time: a `token` request waits for that
    /// read (within its timeout) instead of being told the keyring is unreadable.
    public internal(set) var restoring = false
    /// Down-scoped access tokens (AccountState+Serving.swift); dropped with the account
    /// and when its configuration changes.
    public internal(set) var scopedTokens = ScopedTokenCache()
    /// The timer armed for the account's next wake-up (`RefreshScheduler`).
    var wake: RefreshScheduler.Wake?
}

extension AccountState {
    /// An account a configuration adds: it holds nothing until its stored session is read.
    public init(new configuration: Configuration, provider: Provider, incarnation: UInt64) {
        var machine = AccountMachine(policy: configuration.policy)
        machine.markKeyringUnreadable(Advice.notReadYet(configuration.name))
        self.init(configuration: configuration, machine: machine, provider: provider, incarnation: incarnation, restoring: true)
    }

    init(configuration: Configuration, machine: AccountMachine, provider: Provider, incarnation: UInt64, restoring: Bool = false) {
        self.configuration = configuration
        self.machine = machine
        self.provider = provider
        self.incarnation = incarnation
        self.restoring = restoring
    }

    /// A user action (login, upgrade, delete, a change of factors) is issued: numbered, so that
    /// its session commits only if no later-issued one has. `interactive`: it holds the account's
    /// one interactive-login slot; `changingPassword`: a refused refresh is no verdict meanwhile.
    public mutating func issueUserAction(interactive: Bool, changingPassword: Bool) -> Result<AccountTicket, TokendError> {
        if interactive {
            guard !interactiveLogin else {
                return .failure(Advice.loginAlreadyWaiting(configuration.name))
            }
            interactiveLogin = true
        }
        if changingPassword { passwordChangesInFlight += 1 }
        issuedUserActions += 1
        return .success(ticket(userAction: issuedUserActions))
    }

    /// The user action `ticket` numbers is over: what it held is released, unless the account
    /// was removed meanwhile (a new incarnation has its own).
    public mutating func userActionEnded(_ ticket: AccountTicket, interactive: Bool, changingPassword: Bool) {
        guard changes(since: ticket).isDisjoint(with: .removed) else { return }
        if interactive { interactiveLogin = false }
        if changingPassword { passwordChangesInFlight -= 1 }
    }

    /// The last refresh was refused for the API key's restrictions or its project
    /// (`RefreshFailure.apiKeyRefusals`): a configuration error the config file cannot fix, with
    /// the session kept.
    public var isBlockedByKeyRestriction: Bool {
        guard case .misconfigured = machine.phase, let failure = machine.lastError else { return false }
        return failure.isAPIKeyRefusal
    }

    public var isRefreshing: Bool {
        if case .refreshing = machine.phase { return true }
        return false
    }

    /// The held session the keyring lacks, for the keyring poll to write back now. Nil while a
    /// refresh is in flight: it writes its own outcome (a rotation before it is served), and the
    /// held session written meanwhile could land after it and put back the refresh token the
    /// rotation replaced (the keyring queue keeps only the last write of an account).
    public var sessionToWriteBack: TokenSet? {
        guard unsaved, !isRefreshing else { return nil }
        return machine.tokens
    }

    /// Something waits for the keyring: a session to write back, or one to read.
    public var hasKeyringWork: Bool {
        if unsaved, machine.tokens != nil { return true }
        if case .awaitingKeyring = machine.phase { return true }
        return false
    }
}

// MARK: - What the engine reads (the machine stays behind the account)

extension AccountState {
    /// The session held in memory.
    public var tokens: TokenSet? { machine.tokens }
    public var lastError: RefreshFailure? { machine.lastError }
    public var lastRefresh: Date? { machine.lastRefresh }
    /// When the account next wants the scheduler's attention (`AccountMachine.nextWake`).
    public var nextWake: Date? { machine.nextWake }
    /// When a backoff ends, if the account is backing off past `now`.
    public func backoff(at now: Date) -> Date? { machine.backoff(at: now) }

    /// The stored session has not been read usably yet (locked, unavailable, first read).
    public var isAwaitingKeyring: Bool {
        if case .awaitingKeyring = machine.phase { return true }
        return false
    }

    /// What the event loop may answer without the engine, and until when (`HeldTokens`).
    public var servableTokens: TokenSet? { machine.servableTokens }
    public var servingHorizon: Date? { machine.servingHorizon }

    /// When a request waiting on a slow refresh is handed the held token instead.
    public func refreshPatienceEnds(deadline: Date) -> Date? { machine.refreshPatienceEnds(deadline: deadline) }

    /// How the latest refresh since `start` went: the new expiry, or why not.
    public func refreshOutcome(since start: Date) -> Result<Date?, TokendError> {
        machine.refreshOutcome(since: start) { Advice.unavailable(lastError: machine.lastError, retryAt: $0) }
    }

    /// The state name `status` and `list` show (docs/protocol.md), and the same without the clock
    /// (`AccountMachine.stateNames`), for a count kept as accounts change.
    public func stateName(at now: Date) -> String { machine.stateName(at: now) }
    public var stateNames: (live: String, expired: String, changesAt: Date?) { machine.stateNames }

    /// Why the account is in its state, for `status`: a backoff's count and next try, or the
    /// phase's own error.
    public var statusMessage: String? {
        if case .backingOff(let until, let attempt) = machine.phase {
            // "time" and "(s)" apart: CoreIsPureTests reads `time(` as the C clock call.
            return "refresh failed \(attempt + 1) time" + "(s) in a row; next try at \(Timestamp.format(until))"
        }
        return machine.phaseError?.message
    }

    /// The session a refresh's answer makes when its account was removed meanwhile, asked of the
    /// account as the refresh left it: with a rotated refresh token it may be the only live one,
    /// so the keyring must still get it. Nil when nothing rotated.
    public func orphanedSession(_ ticket: AccountTicket, _ outcome: RefreshOutcome, at now: Date) -> TokenSet? {
        guard let presented = ticket.refreshToken, case .refreshed(let issued) = outcome, let rotated = issued.refreshToken, rotated != presented else {
            return nil
        }
        // A narrowed grant rotates only the refresh token: its access token is not the session's.
        return ticket.narrowedTo == nil ? machine.tokensAfter(ticket, issued, at: now) : machine.tokensAfterRotation(ticket, to: rotated)
    }
}
