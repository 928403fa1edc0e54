import CLibsecret
import TokendCore
import TokendSystem

/// A store whose every operation is a blocking call (a child process, a TPM command, a file):
/// `QueuedStore` runs them on a thread of their own with `KeyringQueue`'s order and deadlines,
/// exactly as the Secret Service's calls run.
protocol BlockingStore: Sendable {
    /// The account's secret (a `TokenSet.keyringJSON`), nil when there is definitely none.
    func read(account: String) -> Result<String?, KeyringError>
    func write(_ secret: String, account: String) -> Result<Void, KeyringError>
    /// True if something was removed.
    func remove(account: String) -> Result<Bool, KeyringError>
    func accounts() -> Result<[String], KeyringError>
    /// Whether the store takes reads and writes now; a failure says why, with its steps.
    func probe() -> Result<Void, KeyringError>
}


/// A `SecretStore` over a `BlockingStore`: the `pass` and `tpm2` stores (`QueuedStore.pass`,
/// `QueuedStore.tpm2`).
public final class QueuedStore: SecretStore {
    private let backend: any BlockingStore
    private let queue: KeyringQueue
    /// Which store this is, for its problem's record (`StoreProblem`).
    let kind: StoreKind

    init(_ backend: any BlockingStore, kind: StoreKind, name: String, timeout: Double, clock: any WallClock = SystemWallClock(), timers: (any TimerSource)? = nil) {
        self.backend = backend
        self.kind = kind
        queue = KeyringQueue(name: name, timeout: timeout, clock: clock, timers: timers ?? SystemTimerSource(clock: clock))
    }

    deinit { queue.stop() }

    /// `result`, its problem noted for the log (`StoreProblem`).
    private static func noted<Success>(_ result: Result<Success, KeyringError>, _ kind: StoreKind) -> Result<Success, KeyringError> {
        StoreProblem.note(result, kind)
        return result
    }

    public func load(account: String, isolation: isolated (any Actor)?) async -> Result<TokenSet?, KeyringError> {
        let backend = self.backend, kind = self.kind
        return await queue.perform(account: account, waitsOutTheQueue: true, isolation: isolation) { _ in
            Self.noted(backend.read(account: account), kind).flatMap { secret in
                guard let secret else { return .success(nil) }
                return Result { () throws(KeyringError) in try TokenSet.decodingStored(secret) }
            }
        }
    }

    public func save(_ tokens: TokenSet, account: String, isolation: isolated (any Actor)?) async -> Result<Void, KeyringError> {
        guard let json = try? tokens.keyringJSON(account: account) else { return .failure(KeyringError(.failed, "could not encode the token set")) }
        let backend = self.backend, kind = self.kind
        return await queue.write(account: account, payload: json, isolation: isolation) { json, _ in
            Self.noted(backend.write(json, account: account), kind)
        }
    }

    /// Compare-and-delete as the Secret Service does it: read, compare, remove, one job on the
    /// store's own thread, so no write of this daemon comes between.
    public func delete(account: String, ifRefreshToken: String?, isolation: isolated (any Actor)?) async -> Result<Bool, KeyringError> {
        let backend = self.backend, kind = self.kind
        return await queue.perform(account: account, isolation: isolation) { _ in
            if let ifRefreshToken {
                switch Self.noted(backend.read(account: account), kind) {
                case .failure(let error): return .failure(error)
                case .success(nil): return .success(false)
                case .success(let secret?):
                    guard (try? TokenSet(keyringJSON: secret))?.refreshToken == ifRefreshToken else { return .success(false) }
                }
            }
            return Self.noted(backend.remove(account: account), kind)
        }
    }

    public func accounts(isolation: isolated (any Actor)?) async -> Result<[String], KeyringError> {
        let backend = self.backend
        return await queue.perform(account: nil, isolation: isolation) { _ in backend.accounts().map { $0.sorted() } }
    }

    public func state(isolation: isolated (any Actor)?) async -> KeyringState {
        let backend = self.backend, kind = self.kind
        switch await queue.perform(account: nil, isolation: isolation, { _ in Self.noted(backend.probe(), kind) }) {
        case .success: return .available
        case .failure(let error) where error.code == .queued: return .available
        case .failure(let error) where error.code == .locked: return .locked
        case .failure(let error) where [.timedOut, .needsConfirmation].contains(error.code): return .needsConfirmation
        case .failure: return .unavailable
        }
    }
}
