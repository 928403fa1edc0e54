import Synchronization
import TokendCore

/// The last thing each store other than the Secret Service said was wrong, with its steps, for
/// the log line and event that announce that store's mood (the Secret Service's own advice comes
/// from `SecretServiceProvider`). Process-wide as that one is; cleared once the store works again.
public enum StoreProblem {
    static let last = Mutex<[StoreKind: KeyringError]>([:])

    /// The store's problem, nil when it has none (or says nothing: the Secret Service).
    public static func current(_ kind: StoreKind?) -> KeyringError? {
        guard let kind else { return nil }
        return last.withLock { $0[kind] }
    }

    static func note(_ result: Result<some Any, KeyringError>, _ kind: StoreKind) {
        switch result {
        case .failure(let error) where error.steps != nil: last.withLock { $0[kind] = error }
        case .success: last.withLock { $0[kind] = nil }
        case .failure: break
        }
    }
}
