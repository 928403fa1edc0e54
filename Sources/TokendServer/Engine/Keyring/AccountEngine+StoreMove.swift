import TokendCore
import TokendKeyring

/// What a `store move` of one account did (`AccountEngine.moveStore`).
public struct StoreMoveOutcome: Sendable, Equatable {
    public var from: StoreKind
    public var to: StoreKind
    /// False: the account's session was in `to` already, and nothing changed.
    public var moved: Bool
    /// Whether a session was copied (false: the account holds none; only its place changed).
    public var copiedSession: Bool
    /// Why the old copy is still there (its store did not answer); tokend removes it once that
    /// store answers. Nil: removed, or there was none.
    public var leftover: String?

    public init(from: StoreKind, to: StoreKind, moved: Bool, copiedSession: Bool, leftover: String? = nil) {
        self.from = from
        self.to = to
        self.moved = moved
        self.copiedSession = copiedSession
        self.leftover = leftover
    }
}

/// `tokenctl store move` (README, "Stores"): the session is written to the new store and read
/// back before the record (`StoreRecord`) names the new store, and the old copy is removed only
/// after that, so a kill -9 between any two steps leaves it readable where the record says. The
/// steps, numbered for `MoveCrashPoint`:
/// 1. the record names the target as a store that may hold a copy (a leftover to remove);
/// 2. the held session is written to the target, 3. and read back the same;
/// 4. in one turn of the actor, with no refresh in flight and the session unchanged since the
///    copy, the record names the target as the account's store, the source as a leftover, and
///    every later write goes to the target;
/// 5. the old copy is removed, and the record forgets it.
extension AccountEngine {
    /// A copy retaken while the session changed under it (a rotation, an import): five changes
    /// within one copy's few milliseconds is a provider or a user racing the move on purpose.
    static let moveAttempts = 5
    /// How long a move waits out a refresh in flight, whose rotation must reach the old store
    /// first: a refresh ends within its HTTP deadline (10 s) and a store write; 15 s stays within
    /// tokenctl's default wait (30 s) with the move's own writes.
    static let moveRefreshPatience: Double = 15
    /// How often that wait looks again.
    static let moveRefreshPoll: Double = 0.05

    public func moveStore(_ name: String, to target: StoreKind) async -> Result<StoreMoveOutcome, TokendError> {
        guard accounts[name] != nil else { return .failure(missingAccount(name)) }
        guard let anchored = store as? BootAnchoredStore, let router = anchored.router, let destination = anchored.only(target) else {
            return .failure(Advice.oneStoreOnly)
        }
        let source = router.effectiveKind(of: name)
        guard source != target else { return .success(StoreMoveOutcome(from: source, to: target, moved: false, copiedSession: false)) }
        guard movesInFlight.insert(name).inserted else { return .failure(Advice.moveUnderWay(name)) }
        defer { movesInFlight.remove(name) }
        if case .failure(let error) = router.changeRecord(name, { $0.leftovers.append(target) }) { return .failure(error.tokendError()) }
        MoveCrashPoint.reached(1)
        var moved: TokenSet??
        for _ in 0..<Self.moveAttempts {
            guard await refreshSettled(name) else { return .failure(Advice.refreshHeldTheMove(name, seconds: Self.moveRefreshPatience)) }
            guard let account = accounts[name] else { return .failure(missingAccount(name)) }
            if account.isAwaitingKeyring {
                let problem = StoreProblem.current(source).map { $0.message + ($0.steps.map { "; \($0)" } ?? "") }
                return .failure(Advice.notReadFromStore(name, source, problem: problem))
            }
            let held = account.tokens
            if case .failure(let error) = await copy(held, of: name, to: destination, target) { return .failure(error) }
            // Step 4: the check and the switch with no suspension between them.
            guard let now = accounts[name], !now.isRefreshing, now.tokens == held else { continue }
            if case .failure(let error) = router.changeRecord(name, { $0.store = target; $0.leftovers.append(source) }) { return .failure(error.tokendError()) }
            moved = .some(held)
            break
        }
        guard let held = moved else { return .failure(Advice.sessionKeptChanging(name, attempts: Self.moveAttempts)) }
        MoveCrashPoint.reached(4)
        logger.info("session moved", metadata: ["account": "\(name)", "from": "\(source.rawValue)", "to": "\(target.rawValue)"])
        // The target holds it: a session kept in memory because the old store failed is saved now.
        if let held { await apply(.sessionStored(held, .success(())), to: name) }
        var outcome = StoreMoveOutcome(from: source, to: target, moved: true, copiedSession: held != nil)
        outcome.leftover = await removeOldCopy(of: name, in: source)
        if outcome.leftover == nil { MoveCrashPoint.reached(5) }
        return .success(outcome)
    }

    /// Steps 2 and 3: `held` written to the target and read back the same; with no session, the
    /// target is emptied instead (a copy an interrupted move left there must not come back).
    private func copy(_ held: TokenSet?, of name: String, to destination: BootAnchoredStore, _ target: StoreKind) async -> Result<Void, TokendError> {
        guard let held else {
            let emptied = await destination.delete(account: name, ifRefreshToken: nil).map { _ in () }
            return noteKeyring(emptied, store: target, account: name) ? .success(()) : .failure(storeRefused(emptied, target, name))
        }
        let saved = await destination.save(held, account: name)
        guard noteKeyring(saved, store: target, account: name) else { return .failure(storeRefused(saved, target, name)) }
        MoveCrashPoint.reached(2)
        let read = await destination.load(account: name)
        guard noteKeyring(read.map { _ in () }, store: target, account: name) else { return .failure(storeRefused(read.map { _ in () }, target, name)) }
        guard case .success(let back?) = read, back.refreshToken == held.refreshToken, back.idToken == held.idToken, back.accessToken == held.accessToken else {
            return .failure(Advice.didNotReadBack(name, target))
        }
        MoveCrashPoint.reached(3)
        return .success(())
    }

    /// What the store's failure `result` (never a success here) says to the user of the move.
    private func storeRefused(_ result: Result<Void, KeyringError>, _ target: StoreKind, _ name: String) -> TokendError {
        let error = result.failure ?? KeyringError(.failed, "no answer")
        return Advice.storeRefused(name, target, said: error.tokendError(account: name))
    }

    /// Waits for the account's refresh in flight to end; false after `moveRefreshPatience`.
    private func refreshSettled(_ name: String) async -> Bool {
        let deadline = clock.now().addingTimeInterval(Self.moveRefreshPatience)
        while accounts[name]?.isRefreshing == true {
            guard clock.now() < deadline, await timers.sleep(seconds: Self.moveRefreshPoll, from: clock) else { return false }
        }
        return true
    }

    /// Step 5: the copy in the account's old store removed, whatever it holds — since the switch
    /// nothing writes the account there, and every write queued there before it carried this
    /// session or an older one (the store's queue keeps their order). Nil once removed; else why not.
    private func removeOldCopy(of name: String, in source: StoreKind) async -> String? {
        guard let anchored = store as? BootAnchoredStore, let router = anchored.router, let old = anchored.only(source) else { return nil }
        let removed = await old.delete(account: name, ifRefreshToken: nil).map { _ in () }
        guard noteKeyring(removed, store: source, account: name) else {
            return Advice.oldCopyKept(source, said: (removed.failure ?? KeyringError(.failed, "no answer")).tokendError(account: name).message)
        }
        return router.changeRecord(name, { $0.leftovers.removeAll { $0 == source } }).failure.map { "the record of moves could not be updated (\($0.message))" }
    }

    /// Old copies that moves left behind (a kill -9 mid-move, a store that did not answer):
    /// each is removed once the account's own session is known, if it holds that session or an
    /// older one; a copy that looks newer is kept and said in the log, never silently lost.
    func removeLeftovers() async {
        guard let anchored = store as? BootAnchoredStore, let router = anchored.router else { return }
        for (name, entry) in router.moves.accounts where !entry.leftovers.isEmpty && !movesInFlight.contains(name) {
            for kind in entry.leftovers {
                guard let account = accounts[name], !account.isAwaitingKeyring, !account.isRefreshing, let old = anchored.only(kind) else { continue }
                // A store that cannot be read now is tried again at the next poll or start.
                guard case .success(let copy) = await old.load(account: name) else { continue }
                if let copy, let live = accounts[name]?.tokens, !copy.isSameOrOlder(than: live) {
                    logger.warning(
                        "an old copy of the session that a move left in \(kind.rawValue) looks newer than the one in use, and is kept: compare them, then `tokenctl store move \(name) --to STORE`",
                        metadata: ["account": "\(name)"])
                    continue
                }
                guard case .success = await old.delete(account: name, ifRefreshToken: copy?.refreshToken) else { continue }
                _ = router.changeRecord(name) { $0.leftovers.removeAll { $0 == kind } }
                if copy != nil { logger.info("an old copy of the session left by a move was removed", metadata: ["account": "\(name)", "store": "\(kind.rawValue)"]) }
            }
        }
    }
}

extension TokenSet {
    /// The same session (its refresh token), or one issued no later than `live`.
    func isSameOrOlder(than live: TokenSet) -> Bool {
        if refreshToken == live.refreshToken { return true }
        guard let issued = issuedAt, let liveIssued = live.issuedAt else { return false }
        return issued <= liveIssued
    }
}

extension Result {
    fileprivate var failure: Failure? { if case .failure(let error) = self { error } else { nil } }
}
