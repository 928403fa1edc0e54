// Engine/ — the accounts' effects (docs/architecture.md, "The engine"): the actor carries out what
// TokendCore's Account/ decides. Never a socket; its one file read is the kernel's boot id
// (BootAnchoredStore).

import Logging
import TokendCore
import TokendKeyring
import TokendProtocol
import TokendProviders
import TokendSystem

/// Holds every account's `AccountState` (one writer), hands it inputs and carries out the
/// effects its transitions return: timers, provider calls, keyring writes, waiting requests,
/// news. libsecret runs on the store's own thread and HTTP on NIO's, never in here.
public actor AccountEngine {
    var accounts: AccountTable
    /// What `accounts` would serve now, for the event loop's fast path (`ConnectionChannelHandler`).
    public nonisolated let heldTokens: HeldTokens
    /// The accounts' token files, kept by `accounts` (Sinks/).
    public nonisolated let tokenFiles: TokenFiles
    let store: any SecretStore
    public nonisolated let clock: any WallClock
    /// Every wait the engine and the daemon keep is a timer here (docs/architecture.md, "Time").
    public nonisolated let timers: any TimerSource
    let narrator: AccountNarrator
    let logger: Logger
    let makeProvider: @Sendable (AccountConfiguration) -> any TokenProvider
    let drawJitter: @Sendable () -> Double
    var scheduler: RefreshScheduler
    var waiters = AccountWaiters()
    let tasks = EngineTasks()
    /// Each store's mood as its operations and probes last said (`StoreKind?`: nil for a store
    /// that does not say which it is); absent: usable. An account shows its own store's.
    var keyringStates: [StoreKind?: KeyringState] = [:]
    var keyringPoll: TimerHandle?
    /// Accounts whose session a `store move` is moving now: one move of an account at a time.
    var movesInFlight: Set<String> = []
    /// Deferred write-backs of ID and access tokens (AccountEngine+WriteBack.swift).
    var writeBacks = WriteBackQueue()
    var writeBackTimer: TimerHandle?
    var writeBackRunning = false
    var keyringPollRunning = false
    /// Local copies of sessions the fleet's watch brought (Fleet/AccountEngine+Fleet.swift).
    var fleetCopies = FleetCopies()
    var nextIncarnation: UInt64 = 0
    var configurationProblem: ConfigurationError?
    /// Set by `shutdown()`: no timer is armed and no background work starts after it.
    var isShutDown = false

    /// Tests pass a `ManualClock` as both `clock` and `timers`: nothing fires unless they advance it.
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
        self.narrator = AccountNarrator(hub: hub, logger: logger, clock: clock)
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
        narrator.hub.finishAll()
    }

    /// Set while the configuration file is broken and no good one has been loaded.
    public func setConfigurationProblem(_ problem: ConfigurationError?) {
        configurationProblem = problem
    }

    func missingAccount(_ name: String) -> TokendError {
        Advice.missingAccount(name, configurationProblem: configurationProblem?.description)
    }

    /// A timer's callback: hops into the engine as one of its tasks (dropped after shutdown).
    nonisolated func hop(_ body: @escaping @Sendable (AccountEngine) async -> Void) -> @Sendable () -> Void {
        { [weak self, tasks] in
            guard let engine = self else { return }
            tasks.spawn { await body(engine) }
        }
    }

    // MARK: - Serving (the requests' loops are AccountCommands+Serving.swift)

    /// One look at a `token` request: carries out what `AccountState.serve` decides (a refresh it
    /// needs starts here, in the same turn), or the wait until the account changes.
    func look(_ name: String, wanting wanted: TokenWanted) -> (TokenLook, TokenWanted) {
        var wanted = wanted
        let now = clock.now()
        guard let serving = accounts[name]?.serve(&wanted, at: now) else { return (.answer(.failure(missingAccount(name))), wanted) }
        switch serving {
        case .grant(let grant, let promise, let reschedule):
            if let promise { heldTokens.promise(name, until: promise) }
            if reschedule { schedule(name) }
            return (.answer(.success(grant)), wanted)
        case .fail(let error):
            return (.answer(.failure(error)), wanted)
        case .refresh(let force):
            startRefresh(name, force: force, narrowedTo: wanted.scope, requested: wanted.scope != nil)
        case .wait:
            break
        }
        if isShutDown { return (.answer(.failure(Advice.shuttingDown)), wanted) }
        if now >= wanted.deadline { return (.answer(.failure(Advice.noFreshToken(within: wanted.timeout, scope: wanted.scope))), wanted) }
        // A refresh held back by another client's promise may start when that ends.
        // A slow refresh in flight ends the wait for the held token (`heldDespiteRefresh`).
        let patience = accounts[name]?.refreshPatienceEnds(deadline: wanted.deadline) ?? wanted.deadline
        let until = min(wanted.deadline, patience, heldTokens.outstanding(name, at: now) ?? wanted.deadline)
        return (.waitForChange(until: until, seen: waiters.changes), wanted)
    }

    /// Whether `condition` holds for the account now (false once it is gone; nil: shutting
    /// down), with the change count to wait past.
    func look(_ name: String, _ condition: @Sendable (AccountState) -> Bool) -> (holds: Bool?, seen: UInt64) {
        guard !isShutDown else { return (nil, 0) }
        return (accounts[name].map(condition) ?? false, waiters.changes)
    }

    /// Forces a refresh now (or joins the one in flight); during a backoff, when `honouringBackoff`,
    /// the refusal instead (a script looping `tokenctl refresh` through a 429 must not hammer on).
    /// With `besideScopedGrants`, a scoped grant holding the refresh slot is not joined (its outcome
    /// is no refresh's): `.slotHeldByScopedGrant`, checked in the same turn that would start it.
    func forceRefresh(_ name: String, honouringBackoff: Bool, besideScopedGrants: Bool = false) -> ForcedRefresh {
        guard let account = accounts[name] else { return .refused(missingAccount(name)) }
        if honouringBackoff, let until = account.backoff(at: clock.now()) { return .refused(Advice.unavailable(lastError: account.lastError, retryAt: until)) }
        if besideScopedGrants, account.scopedTokens.inFlight != nil { return .slotHeldByScopedGrant }
        startRefresh(name, force: true)
        return .started
    }

    enum ForcedRefresh { case started, refused(TokendError), slotHeldByScopedGrant }

    /// How the latest refresh since `start` went (`AccountState.refreshOutcome`).
    func refreshOutcome(_ name: String, since start: Date) -> Result<Date?, TokendError> {
        guard let account = accounts[name] else { return .failure(missingAccount(name)) }
        return account.refreshOutcome(since: start)
    }

    // MARK: - Waiting

    /// Suspends until the account's state changes or the deadline passes; at once if anything
    /// changed since the count `seen` (a look taken in an earlier turn of the actor).
    func waitForChange(_ name: String, until deadline: Date, after seen: UInt64) async {
        let id = waiters.nextID()
        let timeout = timers.schedule(at: deadline, hop { await $0.resumeWaiter(id) })
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            guard accounts[name] != nil, !isShutDown, seen == waiters.changes else { return continuation.resume() }
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
