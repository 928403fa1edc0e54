import Synchronization
import TokendCore
import TokendKeyring
import TokendSystem

/// A `SecretStore` in a dictionary, for tests of the modules that use one, with knobs for the
/// keyring's bad days. It keeps the keyring's rules: a locked store still lists its accounts and
/// still knows that an absent account is absent; nothing is deleted or written while locked.
public final class InMemorySecretStore: SecretStore {
    private struct State {
        /// Secrets as the real store keeps them (keyring JSON), so a corrupt item can be planted.
        var items: [String: String] = [:]
        var simulatedState: KeyringState = .available
        var hang = false
        var operationCount = 0
        var bulkReads = 0
        var reads = 0
    }

    /// How long a hanging operation takes to answer `.timedOut`, in seconds; the default is
    /// `LibsecretStore`'s, tests pass a short one.
    public let timeout: Double
    private let state = Mutex(State())
    /// Where a hanging operation waits out `timeout`: real time unless a test passes its manual clock.
    private let clock: any WallClock
    private let timers: any TimerSource

    public init(timeout: Double = 5, items: [String: TokenSet] = [:], clock: any WallClock = SystemWallClock(), timers: (any TimerSource)? = nil) {
        self.timeout = timeout
        self.clock = clock
        self.timers = timers ?? SystemTimerSource(clock: clock)
        state.withLock { state in
            for (account, tokens) in items { state.items[account] = try? tokens.keyringJSON() }
        }
    }

    /// `.locked` and `.unavailable` make operations fail with that code. As with the real store,
    /// a locked one still answers `accounts()` and `nil` for an account it has no item for:
    /// attributes stay readable when locked.
    public var simulatedState: KeyringState {
        get { state.withLock { $0.simulatedState } }
        set { state.withLock { $0.simulatedState = newValue } }
    }

    /// When set, operations never run and answer `.timedOut` after `timeout`.
    public var hang: Bool {
        get { state.withLock { $0.hang } }
        set { state.withLock { $0.hang = newValue } }
    }

    /// How many operations were started, hanging ones included.
    public var operationCount: Int { state.withLock { $0.operationCount } }

    /// What is stored for an account, for assertions; nil if absent or unreadable.
    public func storedTokens(account: String) -> TokenSet? {
        state.withLock { $0.items[account] }.flatMap { try? TokenSet(keyringJSON: $0) }
    }

    /// Plants a raw secret, e.g. one that is not a token set, to test the `.corrupt` path.
    public func storeRaw(_ secret: String, account: String) {
        state.withLock { $0.items[account] = secret }
    }

    public func load(account: String, isolation: isolated (any Actor)? = #isolation) async -> Result<TokenSet?, KeyringError> {
        await answer { state throws(KeyringError) -> TokenSet? in
            try Self.requireReachable(state)
            state.reads += 1
            guard let secret = state.items[account] else { return nil }
            if state.simulatedState == .locked { throw Self.locked }
            return try TokenSet.decodingStored(secret)
        }
    }

    public func save(_ tokens: TokenSet, account: String, isolation: isolated (any Actor)? = #isolation) async -> Result<Void, KeyringError> {
        await answer { state throws(KeyringError) in
            try Self.requireUnlocked(state)
            do { state.items[account] = try tokens.keyringJSON() } catch {
                throw KeyringError(.failed, "could not encode the token set")
            }
        }
    }

    public func delete(account: String, ifRefreshToken: String?, isolation: isolated (any Actor)? = #isolation) async -> Result<Bool, KeyringError> {
        await answer { state throws(KeyringError) -> Bool in
            try Self.requireUnlocked(state)
            guard let secret = state.items[account] else { return false }
            if let ifRefreshToken {
                guard let tokens = try? TokenSet(keyringJSON: secret), tokens.refreshToken == ifRefreshToken else {
                    return false
                }
            }
            state.items[account] = nil
            return true
        }
    }

    public func accounts(isolation: isolated (any Actor)? = #isolation) async -> Result<[String], KeyringError> {
        await answer { state throws(KeyringError) -> [String] in
            try Self.requireReachable(state)
            return state.items.keys.sorted()
        }
    }

    /// Like the real store: a locked store reads nothing in bulk, and says its items may exist.
    public func loadAll(isolation: isolated (any Actor)? = #isolation) async -> Result<StoredSessions, KeyringError> {
        await answer { state throws(KeyringError) -> StoredSessions in
            try Self.requireReachable(state)
            state.bulkReads += 1
            if state.simulatedState == .locked { return StoredSessions(sessions: [:], othersMayExist: !state.items.isEmpty) }
            let sessions = state.items.mapValues { secret in
                Result { () throws(KeyringError) in try TokenSet.decodingStored(secret) }
            }
            return StoredSessions(sessions: sessions, othersMayExist: false)
        }
    }

    /// How many bulk reads (`loadAll`) and reads of one account (`load`) were answered.
    public var bulkReads: Int { state.withLock { $0.bulkReads } }
    public var reads: Int { state.withLock { $0.reads } }

    public func state(isolation: isolated (any Actor)? = #isolation) async -> KeyringState {
        switch await answer({ state throws(KeyringError) -> KeyringState in state.simulatedState }) {
        case .success(let state): return state
        case .failure: return .unavailable
        }
    }

    /// Runs `body` at once (before any suspension, like the real store's enqueue), unless the
    /// store hangs: then waits out the timeout and answers `.timedOut` without running it.
    private func answer<Success: Sendable>(
        _ body: (inout State) throws(KeyringError) -> Success
    ) async -> Result<Success, KeyringError> {
        let outcome = state.withLock { state -> Result<Success, KeyringError>? in
            state.operationCount += 1
            if state.hang { return nil }
            do throws(KeyringError) { return .success(try body(&state)) } catch { return .failure(error) }
        }
        if let outcome { return outcome }
        // A cancelled wait ends early; the answer is the same, the operation did not happen.
        _ = await timers.sleep(seconds: timeout, from: clock)
        return .failure(KeyringError(.timedOut, "the Secret Service did not answer within \(timeout) s (simulated)"))
    }

    private static let locked = KeyringError(.locked, "the collection is locked (simulated)")

    private static func requireReachable(_ state: State) throws(KeyringError) {
        if state.simulatedState == .unavailable {
            throw KeyringError(.unavailable, "no Secret Service (simulated)")
        }
    }

    private static func requireUnlocked(_ state: State) throws(KeyringError) {
        try requireReachable(state)
        if state.simulatedState == .locked { throw locked }
    }
}
