/// What tokend says when a `store move` cannot do what was asked (README, "Moving a session"),
/// each ending in what to do next. Store names and account names only.
extension Advice {
    /// A daemon whose store is not the router (a test's double) has nowhere to move to.
    public static let oneStoreOnly = TokendError(.unsupportedOp, "store move: this daemon keeps every session in one store")

    public static func moveUnderWay(_ name: String) -> TokendError {
        TokendError(.unavailable, "a move of \(name)'s session is already under way; run tokenctl status \(name) once it ends")
    }

    /// A refresh in flight for longer than the move waits (its rotation must land first).
    public static func refreshHeldTheMove(_ name: String, seconds: Double) -> TokendError {
        TokendError(.unavailable, "\(name): a refresh has been in flight for \(Int(saturating: seconds)) s, and the move waits for its outcome; try again later")
    }

    /// The session has not been read from its store (it is unusable): nothing sure to move.
    /// `problem`: that store's own problem and steps, when it said.
    public static func notReadFromStore(_ name: String, _ store: StoreKind, problem: String?) -> TokendError {
        TokendError(
            .keyringUnavailable,
            "\(name)'s session in \(store.rawValue) has not been read yet, so there is nothing sure to move\(problem.map { ": \($0)" } ?? ""); make \(store.rawValue) usable, then move it")
    }

    public static func sessionKeptChanging(_ name: String, attempts: Int) -> TokendError {
        TokendError(.unavailable, "\(name)'s session changed \(attempts) times while it was copied; try again")
    }

    public static func didNotReadBack(_ name: String, _ target: StoreKind) -> TokendError {
        TokendError(.keyringUnavailable, "\(name)'s session did not read back from \(target.rawValue) as it was written; it stays where it was")
    }

    /// The target refused the copy; `said`: its own error, with its steps.
    public static func storeRefused(_ name: String, _ target: StoreKind, said: TokendError) -> TokendError {
        TokendError(said.code, "\(target.rawValue) cannot take \(name)'s session now, so it stays where it was: \(said.message)")
    }

    /// The move is done, but its old copy is still there (the reply's warning).
    public static func oldCopyKept(_ source: StoreKind, said: String) -> String {
        "the old copy in \(source.rawValue) could not be removed now (\(said)); tokend removes it once \(source.rawValue) answers"
    }
}
