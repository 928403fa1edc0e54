import Synchronization

/// The last thing a store other than the Secret Service said was wrong, with its steps, for the
/// log line and event that announce the keyring's mood (the Secret Service's own advice comes
/// from `SecretServiceProvider`). Process-wide as that one is; nil once a store works again.
public enum StoreProblem {
    static let last = Mutex<KeyringError?>(nil)

    public static var current: KeyringError? { last.withLock { $0 } }

    static func note(_ result: Result<some Any, KeyringError>) {
        switch result {
        case .failure(let error) where error.steps != nil: last.withLock { $0 = error }
        case .success: last.withLock { $0 = nil }
        case .failure: break
        }
    }
}
