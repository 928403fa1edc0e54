import TokendCore
import TokendKeyring

extension KeyringState {
    /// The keyring's mood after an operation answered `result`: any success means usable; a
    /// locked answer, locked; a failure of one item (`failed`, `corrupt`) or a write still queued
    /// behind others (`queued`: busy, not down) says nothing about the keyring; anything else (no
    /// Secret Service) means unavailable; a timeout, a service that may wait on a dialog.
    func after(_ result: Result<Void, KeyringError>) -> KeyringState {
        switch result {
        case .success: .available
        case .failure(let error) where error.code == .locked: .locked
        case .failure(let error) where [.timedOut, .needsConfirmation].contains(error.code): .needsConfirmation
        case .failure(let error) where [.failed, .corrupt, .queued].contains(error.code): self
        case .failure: .unavailable
        }
    }

    /// A probe that found the keyring in this (unusable) state, as the failure of an operation.
    var probeFailure: KeyringError {
        let code: KeyringError.Code = switch self {
        case .locked: .locked
        case .needsConfirmation: .timedOut
        default: .unavailable
        }
        return KeyringError(code, "keyring \(rawValue)")
    }
}

extension Result<StoredSessions, KeyringError> {
    /// What a bulk read says of `name`'s stored session; nil: it cannot tell, and the account
    /// reads its own. A failure is what each account's own read would have said too (a locked
    /// keyring is not a failure here: its items are left to the reads one by one).
    func session(of name: String) -> Result<TokenSet?, KeyringError>? {
        switch self {
        case .failure(let error): .failure(error)
        case .success(let read):
            if let session = read.sessions[name] { session.map { Optional($0) } } else if read.othersMayExist { nil } else { .success(nil) }
        }
    }
}
