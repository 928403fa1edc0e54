// Engine/ — the accounts: `AccountEngine` (an actor) owns every account's state, runs refreshes,
// logins, imports and logouts in the order the user issued them, and tells the keyring, the
// refresh timers, waiting requests and the event hub what happened. It calls TokendCore (the pure
// per-account machine), TokendKeyring and TokendProviders; it never touches a socket, and its
// one file read is the kernel's boot id (BootAnchoredStore).

import Logging
import TokendCore
import TokendKeyring
import TokendProtocol
import TokendProviders
import TokendSystem

/// A token handed to a caller.
public struct TokenGrant: Sendable, Equatable {
    public var token: String
    public var kind: TokenKind
    public var expiresAt: Date
}

/// Coordinates every account: serving, refreshes (single flight), sessions, configuration. An
/// actor, so account state has one writer; libsecret runs on the store's own thread and HTTP on
/// NIO's, never in here. The concerns it coordinates live beside it (docs/architecture.md,
/// "The engine"): each account's `AccountMachine` decides, `RefreshScheduler` arms the timers,
/// `AccountWaiters` holds waiting requests, `EngineTasks` runs background work, `Advice` words
/// refusals; keyring write-back, status and events are in this type's extensions.
public actor AccountEngine {
    struct Account {
        var configuration: AccountConfiguration
        var machine: AccountMachine
        var provider: any TokenProvider
        /// The session in memory has not reached the keyring yet (it was locked or unavailable
        /// when we wrote): written back as soon as the keyring answers again.
        var unsaved = false
        /// The keyring holds this session's refresh token but older ID and access tokens: a
        /// refresh that did not rotate the refresh token is served at once and written back
        /// later, coalesced (AccountEngine+WriteBack.swift).
        var writeBackDeferred = false
        /// Unique across the engine's life: an account removed and added again by reloads is a
        /// new incarnation, so a refresh or a keyring read begun for the old one can never be
        /// applied to the new one (its machine's generations start over).
        var incarnation: UInt64
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
        var restoring = false
        /// Down-scoped access tokens (AccountEngine+ScopedTokens.swift); dropped with the account
        /// and when its configuration changes.
        var scopedTokens = ScopedTokenCache()
        /// The timer armed for the account's next wake-up (`RefreshScheduler`).
        var wake: RefreshScheduler.Wake?
    }

    var accounts: AccountTable
    /// What `accounts` would serve now, for the event loop's fast path (`ConnectionChannelHandler`).
    public nonisolated let heldTokens: HeldTokens
    /// The accounts' token files, kept by `accounts` (Sinks/).
    public nonisolated let tokenFiles: TokenFiles
    let store: any SecretStore
    public nonisolated let clock: any WallClock
    /// Every wait the engine and the daemon keep is a timer here (docs/architecture.md, "Time").
    public nonisolated let timers: any TimerSource
    let hub: EventHub
    let logger: Logger
    let makeProvider: @Sendable (AccountConfiguration) -> any TokenProvider
    let drawJitter: @Sendable () -> Double
    var scheduler: RefreshScheduler
    var waiters = AccountWaiters()
    let tasks = EngineTasks()
    var keyringState: KeyringState = .available
    var keyringPoll: TimerHandle?
    /// Deferred write-backs of ID and access tokens (AccountEngine+WriteBack.swift).
    var writeBacks = WriteBackQueue()
    var writeBackTimer: TimerHandle?
    var writeBackRunning = false
    var keyringPollRunning = false
    var nextIncarnation: UInt64 = 0
    var configurationProblem: ConfigurationError?
    /// Set by `shutdown()`: no timer is armed and no background work starts after it.
    var isShutDown = false

    /// `timers` defaults to the process's timer thread; tests pass a `ManualClock` (as both `clock` and
    /// `timers`) so that nothing fires unless the test advances it.
    public init(
        store: any SecretStore, clock: any WallClock = ForwardClock(), timers: (any TimerSource)? = nil, hub: EventHub, logger: Logger,
        drawJitter: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) },
        makeProvider: @escaping @Sendable (AccountConfiguration) -> any TokenProvider
    ) {
        let held = HeldTokens()
        self.heldTokens = held
        let timers = timers ?? SystemTimerSource(clock: clock)
        let files = TokenFiles(clock: clock, timers: timers, logger: logger)
        self.tokenFiles = files
        self.accounts = AccountTable(held: held, files: files)
        self.store = store
        self.clock = clock
        self.timers = timers
        self.scheduler = RefreshScheduler(timers: timers)
        self.hub = hub
        self.logger = logger
        self.drawJitter = drawJitter
        self.makeProvider = makeProvider
    }

    public var accountNames: [String] { accounts.names }

    /// Stops every timer, releases every waiting request and takes no new background work
    /// (daemon shutdown). A refresh in flight still finishes and reaches the keyring.
    public func shutdown() {
        isShutDown = true
        for name in accounts.names { disarm(name) }
        writeBackTimer?.cancel()
        writeBackTimer = nil
        keyringPoll?.cancel()
        keyringPoll = nil
        waiters.wakeEveryone()
        tasks.close()
        hub.finishAll()
    }

    /// Set while the configuration file is broken and no good one has been loaded.
    public func setConfigurationProblem(_ problem: ConfigurationError?) {
        configurationProblem = problem
    }

    func missingAccount(_ name: String) -> TokendError {
        Advice.missingAccount(name, configurationProblem: configurationProblem)
    }

    /// A timer's callback: hops into the engine as one of its tasks (dropped after shutdown).
    nonisolated func hop(_ body: @escaping @Sendable (AccountEngine) async -> Void) -> @Sendable () -> Void {
        { [weak self, tasks] in
            guard let engine = self else { return }
            tasks.spawn { await body(engine) }
        }
    }

    // MARK: - Serving

    /// A token of `kind` valid for at least `minValid` seconds, refreshing (and waiting at most
    /// `timeout` seconds) when the held one will not do. Never an expired token.
    public func token(account name: String, kind requested: TokenKind?, minValid: Double, timeout: Double) async -> Result<TokenGrant, TokendError> {
        guard let initial = accounts[name] else { return .failure(missingAccount(name)) }
        let kind = requested ?? initial.configuration.defaultTokenKind
        let start = clock.now()
        let deadline = start.addingTimeInterval(timeout)
        var triedBlockedKey = false
        while true {
            guard let account = accounts[name] else { return .failure(missingAccount(name)) }
            let now = clock.now()
            switch account.machine.serve(kind, minValid: minValid, at: now, requestStart: start) {
            case .token(let token, let expiresAt):
                heldTokens.promise(name, until: now.addingTimeInterval(max(0, minValid)))
                return .success(TokenGrant(token: token, kind: kind, expiresAt: expiresAt))
            case .refuse where !triedBlockedKey && Self.isBlockedByKeyRestriction(account.machine):
                // The key is fixed in the Cloud console, which tokend cannot see: each request
                // that needs a new token tries once, so the held session serves again unasked.
                triedBlockedKey = true
                startRefresh(name, force: true)
            case .refuse(let error):
                guard account.restoring, now < deadline else { return .failure(error) }
            case .refresh:
                startRefresh(name)
            case .wait:
                if let (token, expiresAt) = account.machine.heldDespiteRefresh(kind, minValid: minValid, at: now, deadline: deadline) {
                    return .success(TokenGrant(token: token, kind: kind, expiresAt: expiresAt))
                }
            case .retryAt(let retryAt):
                if retryAt <= now {
                    startRefresh(name)  // the retry is due (e.g. the machine slept through it)
                } else if retryAt > deadline {
                    return .failure(Advice.unavailable(lastError: account.machine.lastError, retryAt: retryAt))
                }
            }
            if isShutDown { return .failure(Advice.shuttingDown) }
            if now >= deadline { return .failure(Advice.noFreshToken(within: timeout)) }
            // A refresh held back by another client's promise may start when that ends.
            // A slow refresh in flight ends the wait for the held token (`heldDespiteRefresh`).
            let patience = accounts[name]?.machine.refreshPatienceEnds(deadline: deadline) ?? deadline
            await waitForChange(name, until: min(deadline, patience, heldTokens.outstanding(name, at: now) ?? deadline))
        }
    }

    /// The last refresh was refused for the API key's restrictions (RefreshClassifier): a
    /// configuration error the config file cannot fix, with the session kept.
    static func isBlockedByKeyRestriction(_ machine: AccountMachine) -> Bool {
        guard case .misconfigured = machine.phase, let code = machine.lastError?.code else { return false }
        return RefreshClassifier.apiKeyRestrictions[code] != nil
    }

    /// Forces a refresh now (or joins the one in flight) and waits for its outcome.
    /// A backoff is honoured: a script looping `tokenctl refresh` through a 429 must not keep
    /// hitting the provider, so during one the answer is `unavailable` with the retry time.
    public func refresh(account name: String, timeout: Double) async -> Result<Date?, TokendError> {
        guard accounts[name] != nil else { return .failure(missingAccount(name)) }
        let start = clock.now()
        await waitOutScopedGrant(name, until: start.addingTimeInterval(timeout))
        if let current = accounts[name]?.machine, let until = current.backoff(at: clock.now()) {
            return .failure(Advice.unavailable(lastError: current.lastError, retryAt: until))
        }
        startRefresh(name, force: true)
        return await awaitRefreshOutcome(name, since: start, deadline: start.addingTimeInterval(timeout))
    }

    /// Waits until no refresh is in flight, then reports how the latest one went.
    func awaitRefreshOutcome(_ name: String, since start: Date, deadline: Date) async -> Result<Date?, TokendError> {
        while let account = accounts[name], case .refreshing = account.machine.phase {
            if isShutDown { return .failure(Advice.shuttingDown) }
            if clock.now() >= deadline { return .failure(Advice.refreshStillRunning(name)) }
            await waitForChange(name, until: deadline)
        }
        guard let machine = accounts[name]?.machine else { return .failure(missingAccount(name)) }
        return machine.refreshOutcome(since: start) { Advice.unavailable(lastError: machine.lastError, retryAt: $0) }
    }

    // MARK: - Waiting

    /// Suspends until the account's state changes or the deadline passes.
    func waitForChange(_ name: String, until deadline: Date) async {
        let id = waiters.nextID()
        let timeout = timers.schedule(at: deadline, hop { await $0.resumeWaiter(id) })
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            guard accounts[name] != nil, !isShutDown else { return continuation.resume() }
            waiters.add(continuation, id: id, account: name)
        }
        timeout.cancel()
    }

    func resumeWaiter(_ id: UInt64) {
        waiters.resume(id)
    }

    /// Every state change wakes the account's waiters; each re-reads the state and decides.
    func wake(_ name: String) {
        waiters.wakeAll(name)
    }
}
