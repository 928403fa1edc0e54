import Dispatch
import Logging
import TokendCore
import TokendKeyring
import TokendProtocol
import TokendProviders

/// A token handed to a caller.
public struct TokenGrant: Sendable, Equatable {
    public var token: String
    public var kind: TokenKind
    public var expiresAt: Date
}

/// Owns every account's state machine and everything that happens to it: refreshes (single
/// flight), timers, keyring writes, waiting requests and events. An actor, so account state has
/// one writer; libsecret runs on the store's own thread and HTTP on NIO's, never in here.
public actor AccountEngine {
    struct Account {
        var configuration: AccountConfiguration
        var machine: AccountMachine
        var provider: any TokenProvider
        var timer: (any DispatchSourceTimer)?
        /// Requests waiting for this account's state to change (a refresh to finish, mostly).
        var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
        /// The session in memory has not reached the keyring yet (it was locked or unavailable
        /// when we wrote): written back as soon as the keyring answers again.
        var unsaved = false
        /// When the timer will start a proactive refresh: the machine's instant, possibly moved
        /// earlier by `RefreshSpreading`. Nil when no proactive refresh is scheduled.
        var proactiveRefresh: Date?
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
    }

    /// Default wait for a refresh when a request names no `timeout`: long enough for a slow
    /// provider (HTTP deadline 10 s plus a keyring write), short enough for an interactive shell.
    public static let defaultTimeout: Double = 30
    /// Upper bound on a request's `timeout`: nothing should hold a connection for longer.
    public static let maximumTimeout: Double = 300
    /// How often every account is re-checked against the wall clock, whatever its timer says:
    /// bounds how late a refresh can be after a clock jump or a suspend the timer slept through.
    static let recheckInterval = 10
    /// How often a locked or missing keyring is probed while something waits to be written or read.
    static let keyringPollInterval = 2
    /// Timers may fire this late: refreshes are scheduled seconds early, so batching wakeups is free.
    static let timerLeeway = DispatchTimeInterval.milliseconds(100)

    var accounts: [String: Account] = [:]
    let store: any SecretStore
    public nonisolated let clock: any WallClock
    let hub: EventHub
    let logger: Logger
    let makeProvider: @Sendable (AccountConfiguration) -> any TokenProvider
    let random: @Sendable () -> Double
    var keyringState: KeyringState = .available
    var keyringPoll: (any DispatchSourceTimer)?
    var keyringPollRunning = false
    var recheckTimer: (any DispatchSourceTimer)?
    var nextWaiterID: UInt64 = 0
    var nextIncarnation: UInt64 = 0
    var configurationProblem: ConfigurationError?
    /// Accounts whose stored session is being read for the first time: a `token` request waits
    /// for that read (within its timeout) instead of being told the keyring is unreadable.
    var restoring: Set<String> = []
    /// Sessions set aside by an endpoint change before they reached the keyring: `restore`
    /// writes each before it reads the account again.
    var setAsideWrites: [String: TokenSet] = [:]
    /// Each account's down-scoped access tokens (AccountEngine+ScopedTokens.swift).
    var scopedTokens: [String: ScopedTokenCache] = [:]
    let timerQueue = DispatchQueue(label: "tokend.timers")

    public init(
        store: any SecretStore, clock: any WallClock = ForwardClock(), hub: EventHub, logger: Logger,
        random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) },
        makeProvider: @escaping @Sendable (AccountConfiguration) -> any TokenProvider
    ) {
        self.store = store
        self.clock = clock
        self.hub = hub
        self.logger = logger
        self.random = random
        self.makeProvider = makeProvider
    }

    // MARK: - Configuration

    /// Starts, updates and stops accounts to match `configuration`. Removed accounts stop (their
    /// keyring items stay); changed ones get a new provider and policy; added ones load their
    /// session from the keyring.
    public func apply(_ configuration: Configuration) async {
        await restore(adopt(configuration))
    }

    /// The part of `apply` that never waits on the keyring: accounts are added (showing
    /// `waiting_for_keyring`), changed and removed at once. Returns the accounts whose stored
    /// sessions `restore(_:)` then reads (the added ones, and changed ones holding nothing) — the daemon does that after it listens, so a
    /// stuck Secret Service can never keep the socket closed.
    public func adopt(_ configuration: Configuration) -> [String] {
        for name in accounts.keys where configuration.accounts[name] == nil {
            guard var account = accounts.removeValue(forKey: name) else { continue }
            scopedTokens[name] = nil
            account.timer?.cancel()
            for waiter in account.waiters.values { waiter.resume() }
            account.waiters = [:]
            logger.info("account removed from the configuration; its keyring item stays", metadata: ["account": "\(name)"])
        }
        var added: [String] = []
        for (name, accountConfiguration) in configuration.accounts.sorted(by: { $0.key < $1.key }) {
            if var account = accounts[name] {
                guard account.configuration != accountConfiguration else { continue }
                account.configuration = accountConfiguration
                account.provider = makeProvider(accountConfiguration)
                scopedTokens[name] = nil  // minted under the old configuration
                account.machine.policy = accountConfiguration.policy
                account.machine.clearMisconfiguration()
                var setAside: TokenSet? = nil
                if let held = account.machine.tokens, held.endpoint != accountConfiguration.endpoint {
                    // The held session may not go to the new endpoint; the keyring keeps it.
                    account.machine.setAside(reason: Self.boundElsewhere(stored: held.endpoint ?? "", account: accountConfiguration))
                    disarm(&account)
                    if account.unsaved { setAside = held }
                    account.unsaved = false
                    logger.error("the account now points at another endpoint; its session is set aside, not sent", metadata: ["account": "\(name)"])
                }
                let reload = account.machine.tokens == nil
                accounts[name] = account
                schedule(name)
                wake(name)
                logger.info("account configuration changed", metadata: ["account": "\(name)"])
                // Written before the account's next read, so the keyring keeps what rotated in memory.
                if let setAside { setAsideWrites[name] = setAside }
                // Nothing held (set aside, or never loaded): the stored session may fit the new endpoint.
                if reload { added.append(name) }
            } else {
                nextIncarnation += 1
                var machine = AccountMachine(policy: accountConfiguration.policy)
                machine.markKeyringUnreadable(Self.notReadYet(name))
                accounts[name] = Account(
                    configuration: accountConfiguration, machine: machine,
                    provider: makeProvider(accountConfiguration), incarnation: nextIncarnation)
                restoring.insert(name)
                added.append(name)
            }
        }
        startRecheckTimer()
        return added
    }

    public var accountNames: [String] { accounts.keys.sorted() }

    /// Stops every timer and releases every waiting request (daemon shutdown).
    public func shutdown() {
        recheckTimer?.cancel()
        keyringPoll?.cancel()
        for name in accounts.keys {
            accounts[name]?.timer?.cancel()
            wake(name)
        }
        hub.finishAll()
    }

    // MARK: - Serving

    /// A token of `kind` valid for at least `minValid` seconds, refreshing (and waiting at most
    /// `timeout` seconds) when the held one will not do. Never an expired token.
    public func token(account name: String, kind requested: TokenKind?, minValid: Double, timeout: Double) async -> Result<TokenGrant, TokendError> {
        guard let initial = accounts[name] else { return .failure(missingAccount(name)) }
        let kind = requested ?? initial.configuration.defaultTokenKind
        let start = clock.now()
        let deadline = start.addingTimeInterval(timeout)
        while true {
            guard let account = accounts[name] else { return .failure(missingAccount(name)) }
            let now = clock.now()
            switch account.machine.serve(kind, minValid: minValid, at: now) {
            case .token(let token, let expiresAt):
                return .success(TokenGrant(token: token, kind: kind, expiresAt: expiresAt))
            case .refuse(let error):
                guard restoring.contains(name), now < deadline else { return .failure(error) }
            case .refresh:
                if let last = account.machine.lastRefresh, last >= start {
                    // A refresh finished during this request and still cannot satisfy it.
                    return .failure(Self.unsatisfiable(kind: kind, minValid: minValid, tokens: account.machine.tokens, now: now))
                }
                startRefresh(name)
            case .wait:
                break
            case .retryAt(let retryAt):
                if retryAt <= now {
                    startRefresh(name)  // the retry is due (e.g. the machine slept through it)
                } else if retryAt > deadline {
                    return .failure(unavailable(account, retryAt: retryAt))
                }
            }
            if now >= deadline {
                return .failure(TokendError(.unavailable, "no fresh token within \(Int(timeout)) s: the refresh is still running; try again"))
            }
            await waitForChange(name, until: deadline)
        }
    }

    /// Why an account is not there: usually a typo, but with a broken configuration file (and
    /// no good one loaded yet) the file is to blame, and saying so saves a confused user.
    func missingAccount(_ name: String) -> TokendError {
        if let configurationProblem { return TokendError(.configError, configurationProblem.description) }
        return TokendError(.unknownAccount, "no account named \"\(name)\" is configured")
    }

    /// Set while the configuration file is broken and no good one has been loaded.
    public func setConfigurationProblem(_ problem: ConfigurationError?) {
        configurationProblem = problem
    }

    static func unsatisfiable(kind: TokenKind, minValid: Double, tokens: TokenSet?, now: Date) -> TokendError {
        guard let (_, expiresAt) = tokens?.token(kind) else {
            return TokendError(.badRequest, "the provider issued no \(kind.rawValue) token on refresh; ask for the other kind")
        }
        let left = Int(saturating: expiresAt.timeIntervalSince(now))
        return TokendError(.badRequest, "min_valid \(Int(minValid)) s is longer than a fresh \(kind.rawValue) token lives (\(left) s); ask for less")
    }

    func unavailable(_ account: Account, retryAt: Date) -> TokendError {
        let reason = account.machine.lastError.map { "\($0.code): \($0.message)" } ?? "the provider is unreachable"
        return TokendError(.unavailable, "no valid token and the provider is failing (\(reason)); next try at \(Timestamp.format(retryAt))")
    }

    // MARK: - Refreshing

    /// Starts a refresh unless one is in flight (then callers simply wait for that one).
    @discardableResult
    func startRefresh(_ name: String, force: Bool = false) -> Bool {
        guard var account = accounts[name] else { return false }
        let startedAt = clock.now()
        guard let ticket = account.machine.startRefresh(at: startedAt, force: force) else { return false }
        disarm(&account)
        accounts[name] = account
        wake(name)
        let provider = account.provider
        let incarnation = account.incarnation
        let held = account.machine.tokens
        Task {
            let outcome = await provider.refresh(refreshToken: ticket.refreshToken).bounded
            await self.finishRefresh(name, ticket: ticket, outcome: outcome, startedAt: startedAt, incarnation: incarnation, held: held)
        }
        return true
    }

    func finishRefresh(
        _ name: String, ticket: AccountMachine.Ticket, outcome: RefreshOutcome, startedAt: Date, incarnation: UInt64, held: TokenSet?
    ) async {
        let now = clock.now()
        guard let before = accounts[name], before.incarnation == incarnation else {
            // The account was removed (or removed and added again) by a reload while this refresh
            // ran. A rotated refresh token may be the only live one now: it still goes to the
            // keyring, unless the stored session is no longer the one this refresh started from.
            if case .refreshed(let issued) = outcome, let held, issued.refreshToken.map({ $0 != ticket.refreshToken }) == true {
                await saveOrphanedRotation(held.merging(issued, sentAt: ticket.startedAt, at: now), account: name, replacing: ticket.refreshToken)
            }
            return
        }
        var saved: Result<Void, KeyringError>? = nil
        if case .refreshed(let issued) = outcome, let next = before.machine.tokensAfter(ticket, issued, at: now) {
            // A rotated refresh token reaches the keyring before anyone is handed the new tokens:
            // a crash from here on cannot leave the keyring with a superseded one.
            saved = await store.save(next, account: name)
        }
        guard var account = accounts[name] else { return }
        let completion = account.machine.finish(ticket, outcome, at: now, unit: random())
        let took = Int(saturating: now.timeIntervalSince(startedAt) * 1000)
        switch completion {
        case .stale:
            logger.info("a refresh finished after a newer session arrived; its result is dropped", metadata: ["account": "\(name)"])
            return
        case .refreshed(let tokens):
            if let saved { account.unsaved = !noteKeyring(saved, account: name) }
            accounts[name] = account
            let expiresAt = tokens.expiresAt.map(Timestamp.format) ?? "unknown"
            logger.info("refreshed", metadata: ["account": "\(name)", "expires_at": "\(expiresAt)", "took_ms": "\(took)"])
            var event = Event(event: .refreshed, account: name, at: Timestamp.format(now))
            event.expiresAt = tokens.expiresAt.map(Timestamp.format)
            hub.publish(event)
            publishUserChange(name, from: before.machine.tokens, to: tokens)
        case .willRetry(let failure, let retryAt):
            accounts[name] = account
            report(failure, of: name, as: .refreshFailed, level: .warning, "refresh failed, will retry", at: now, took: took, retryAt: retryAt)
        case .loggedOut(let failure, let refreshToken):
            accounts[name] = account
            report(failure, of: name, as: .needsLogin, level: .error, "the provider ended the session; the account needs a new login", at: now, took: took)
            schedule(name)
            wake(name)
            // Only if it is still the refresh token that failed: an import may have replaced it.
            let deleted = await store.delete(account: name, ifRefreshToken: refreshToken)
            _ = noteKeyring(deleted.map { _ in () }, account: name)
            return
        case .misconfigured(let failure):
            accounts[name] = account
            report(failure, of: name, as: .configError, level: .error, "the provider rejects the account's configuration", at: now, took: took)
        }
        schedule(name)
        wake(name)
    }

    /// Writes a rotated session whose account is gone, if the keyring still holds the refresh
    /// token it replaces (a read then a write, both queued in order from this actor).
    func saveOrphanedRotation(_ tokens: TokenSet, account name: String, replacing old: String) async {
        guard case .success(let stored?) = await store.load(account: name), stored.refreshToken == old else { return }
        let saved = await store.save(tokens, account: name)
        if noteKeyring(saved, account: name) {
            logger.info("a refresh that finished after its account was removed had its rotated token saved", metadata: ["account": "\(name)"])
        }
    }

    /// A failed refresh, told once to the log and once to watchers: names and codes, never a token.
    func report(
        _ failure: RefreshFailure, of name: String, as kind: Event.Kind, level: Logger.Level, _ message: Logger.Message,
        at now: Date, took: Int, retryAt: Date? = nil
    ) {
        var metadata: Logger.Metadata = ["account": "\(name)", "code": "\(failure.code)", "error": "\(failure.message)", "took_ms": "\(took)"]
        if let retryAt { metadata["retry_in_s"] = "\(Int(saturating: retryAt.timeIntervalSince(now)))" }
        logger.log(level: level, message, metadata: metadata)
        var event = Event(event: kind, account: name, at: Timestamp.format(now))
        event.error = failure
        event.retryAt = retryAt.map(Timestamp.format)
        hub.publish(event)
    }

    /// Forces a refresh now (or joins the one in flight) and waits for its outcome.
    /// A backoff is honoured: a script looping `tokenctl refresh` through a 429 must not keep
    /// hitting the provider, so during one the answer is `unavailable` with the retry time.
    public func refresh(account name: String, timeout: Double) async -> Result<Date?, TokendError> {
        guard accounts[name] != nil else { return .failure(missingAccount(name)) }
        let start = clock.now()
        await waitOutScopedGrant(name, until: start.addingTimeInterval(timeout))
        if let current = accounts[name], let until = current.machine.backoff(at: clock.now()) { return .failure(unavailable(current, retryAt: until)) }
        startRefresh(name, force: true)
        return await awaitRefreshOutcome(name, since: start, deadline: start.addingTimeInterval(timeout))
    }

    /// Waits until no refresh is in flight, then reports how the latest one went.
    func awaitRefreshOutcome(_ name: String, since start: Date, deadline: Date) async -> Result<Date?, TokendError> {
        while let account = accounts[name], case .refreshing = account.machine.phase {
            if clock.now() >= deadline {
                return .failure(TokendError(.unavailable, "the refresh is still running after the timeout; see tokenctl status \(name)"))
            }
            await waitForChange(name, until: deadline)
        }
        guard let account = accounts[name] else { return .failure(missingAccount(name)) }
        if let last = account.machine.lastRefresh, last >= start { return .success(account.machine.tokens?.expiresAt) }
        switch account.machine.phase {
        case .needsLogin(let reason): return .failure(TokendError(.needsLogin, reason))
        case .misconfigured(let reason): return .failure(TokendError(.configError, reason))
        case .awaitingKeyring(let error): return .failure(error)
        case .backingOff(let until, _): return .failure(unavailable(account, retryAt: until))
        case .idle, .refreshing: return .failure(TokendError(.unavailable, "the refresh did not complete; try again"))
        }
    }

    // MARK: - Sessions

    /// Stores a session from an import (or a login), then refreshes it so the caller learns at
    /// once whether the provider accepts it. Wins over any refresh in flight.
    public func install(account name: String, tokens: TokenSet, timeout: Double) async -> Result<Date?, TokendError> {
        guard var account = accounts[name] else { return .failure(missingAccount(name)) }
        let start = clock.now()
        var tokens = tokens
        tokens.endpoint = account.configuration.endpoint
        // A new session does not lift the provider's rate limit: it waits out the backoff too.
        let backoff = account.machine.backoff(at: start)
        account.commitNewUserAction()
        account.machine.install(tokens, unit: random())
        if let backoff { account.machine.holdBackoff(until: backoff) }
        disarm(&account)
        accounts[name] = account
        wake(name)
        let saved = await store.save(tokens, account: name)
        if accounts[name]?.machine.tokens == tokens { accounts[name]?.unsaved = !noteKeyring(saved, account: name) }
        hub.publish(Event(event: .imported, account: name, at: Timestamp.format(clock.now())))
        logger.info("session imported", metadata: ["account": "\(name)"])
        if let backoff {
            schedule(name)
            return .failure(TokendError(.unavailable, "the session is imported and stored, but the provider asked for a pause: it is checked at \(Timestamp.format(backoff))"))
        }
        startRefresh(name, force: true)
        return await awaitRefreshOutcome(name, since: start, deadline: start.addingTimeInterval(timeout))
    }

    /// Forgets the account's session, in memory and in the keyring, revoking its refresh token at
    /// the provider first where the provider can. A failed revocation is reported, not fatal: the
    /// local session goes either way. Nil outcome: there was no session to revoke.
    public func logout(account name: String) async -> Result<RevocationOutcome?, TokendError> {
        guard var account = accounts[name] else { return .failure(missingAccount(name)) }
        account.commitNewUserAction()
        accounts[name] = account
        let held = account.machine.tokens?.refreshToken
        let provider = account.provider
        let deleted = await forgetSession(name, reason: "logged out; run: tokenctl login \(name)") {
            // Revoked before the keyring item goes: should revocation fail, that is reported,
            // and the local session still goes.
            guard let held else { return nil }
            let outcome = await provider.revoke(refreshToken: held)
            switch outcome {
            case .failed(let failure):
                self.logger.warning("revocation at the provider failed; the local session is removed anyway", metadata: [
                    "account": "\(name)", "code": "\(failure.code)", "error": "\(failure.message)",
                ])
            case .revoked:
                self.logger.info("session revoked at the provider", metadata: ["account": "\(name)"])
            case .unsupported:
                break
            }
            return outcome
        }
        hub.publish(Event(event: .loggedOut, account: name, at: Timestamp.format(clock.now())))
        publishSignedOut(name, reason: "logout")
        logger.info("logged out", metadata: ["account": "\(name)"])
        return deleted.result.map { deleted.revocation }.mapError { error in
            var mapped = error.tokendError(account: name)
            mapped.message = "logged out in memory, but the stored session could not be deleted (\(mapped.message)); run logout again once the keyring is usable"
            return mapped
        }
    }

    /// Forgets the account's session in memory (anything in flight becomes stale) and deletes
    /// its keyring item: a logout, or a user deleted at the provider. `beforeDeleting` runs in
    /// between (a logout revokes there), once nothing in memory can use the session any more.
    func forgetSession(
        _ name: String, reason: String, beforeDeleting: (() async -> RevocationOutcome?)? = nil
    ) async -> (result: Result<Void, KeyringError>, revocation: RevocationOutcome?) {
        guard var account = accounts[name] else { return (.success(()), nil) }
        account.machine.forget(reason: reason)
        disarm(&account)
        account.unsaved = false
        accounts[name] = account
        wake(name)
        let revocation = await beforeDeleting?()
        let deleted = await store.delete(account: name, ifRefreshToken: nil).map { _ in () }
        _ = noteKeyring(deleted, account: name)
        return (deleted, revocation)
    }

    // MARK: - Waiting

    /// Suspends until the account's state changes or the deadline passes.
    func waitForChange(_ name: String, until deadline: Date) async {
        nextWaiterID += 1
        let id = nextWaiterID
        let delay = max(0, deadline.timeIntervalSince(clock.now()))
        let timeout = Task { [weak self] in
            try? await Task.sleep(for: .milliseconds(Int64(delay * 1000) + 1))
            await self?.resumeWaiter(name, id)
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            guard accounts[name] != nil else { return continuation.resume() }
            accounts[name]?.waiters[id] = continuation
        }
        timeout.cancel()
    }

    func resumeWaiter(_ name: String, _ id: UInt64) {
        accounts[name]?.waiters.removeValue(forKey: id)?.resume()
    }

    /// Every state change wakes the account's waiters; each re-reads the state and decides.
    func wake(_ name: String) {
        guard let waiters = accounts[name]?.waiters, !waiters.isEmpty else { return }
        accounts[name]?.waiters = [:]
        for waiter in waiters.values { waiter.resume() }
    }

    // MARK: - Timers

    /// No timer and no claimed refresh slot for the account until `schedule` arms one again.
    func disarm(_ account: inout Account) {
        account.timer?.cancel()
        account.timer = nil
        account.proactiveRefresh = nil
    }

    /// Arms the account's timer for its next wake-up. A proactive refresh is spread away from
    /// seconds that other accounts' refreshes already fill.
    func schedule(_ name: String) {
        guard var account = accounts[name] else { return }
        disarm(&account)
        let now = clock.now()
        if var wake = account.machine.nextWake {
            if case .idle = account.machine.phase, wake > now, let tokens = account.machine.tokens, let expiresAt = tokens.expiresAt {
                let margin = account.machine.policy.margin(expiresAt: expiresAt, issuedAt: tokens.issuedAt)
                let taken = accounts.compactMap { $0.key == name ? nil : $0.value.proactiveRefresh }
                wake = RefreshSpreading.slot(desired: wake, earliest: max(now, wake.addingTimeInterval(-margin)), taken: taken)
                account.proactiveRefresh = wake
            }
            let timer = DispatchSource.makeTimerSource(queue: timerQueue)
            timer.schedule(wallDeadline: .now() + max(0, wake.timeIntervalSince(now)), leeway: Self.timerLeeway)
            timer.setEventHandler { [weak self] in
                Task { await self?.timerFired(name) }
            }
            timer.resume()
            account.timer = timer
        }
        accounts[name] = account
    }

    func timerFired(_ name: String) {
        guard let account = accounts[name] else { return }
        let now = clock.now()
        if account.machine.isRefreshDue(at: now) || account.proactiveRefresh.map({ $0 <= now }) == true {
            startRefresh(name)
        } else {
            schedule(name)  // woke early (the clock moved back): sleep again until the true instant
        }
    }

    /// The safety net under the per-account timers: a wall-clock jump or a suspend can make a
    /// timer late, and a late refresh means a dead token.
    func startRecheckTimer() {
        guard recheckTimer == nil else { return }
        let timer = DispatchSource.makeTimerSource(queue: timerQueue)
        timer.schedule(deadline: .now() + .seconds(Self.recheckInterval), repeating: .seconds(Self.recheckInterval))
        timer.setEventHandler { [weak self] in
            Task { await self?.recheck() }
        }
        timer.resume()
        recheckTimer = timer
    }

    /// Starts every refresh that is due by the wall clock now.
    public func recheck() {
        let now = clock.now()
        for (name, account) in accounts where account.machine.isRefreshDue(at: now) {
            startRefresh(name)
        }
        refreshDueScopedTokens(at: now)
    }
}
