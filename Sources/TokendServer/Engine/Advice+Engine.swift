import TokendCore
import TokendKeyring
import TokendProtocol
import TokendProviders

/// The engine's sentences for a user (Advice, TokendCore, says what the account's state
/// itself has to say): each ends in what to do next. Names, codes and hosts only, never a secret.
extension Advice {
    /// No account by that name: usually a typo, but with a broken configuration file (and no good
    /// one loaded yet) the file is to blame, and saying so saves a confused user.
    static func missingAccount(_ name: String, configurationProblem: ConfigurationError?) -> TokendError {
        if let configurationProblem { return TokendError(.configError, configurationProblem.description) }
        return TokendError(.unknownAccount, "no account named \"\(name)\" is configured")
    }

    /// A login by a method the account's provider does not offer.
    static func methodNotOffered(_ method: LoginRequest.Method, account: AccountConfiguration) -> TokendError? {
        let offered = account.provider.base.descriptor.loginMethods
        guard !offered.contains(method) else { return nil }
        return TokendError(
            .badRequest,
            "\(account.name) is a \(account.kind.rawValue) account, which signs in with method \(offered.map(\.rawValue).joined(separator: " or ")), not \(method.rawValue) (see tokenctl login --help)")
    }

    static func noFreshToken(within timeout: Double, scope: TokenScope? = nil) -> TokendError {
        let seconds = Int(saturating: timeout)
        guard let scope else { return TokendError(.unavailable, "no fresh token within \(seconds) s: the refresh is still running; try again") }
        return TokendError(.unavailable, "no token for \(scope) within \(seconds) s: a refresh is still running; try again")
    }

    /// A request still waiting when the daemon stops (systemd restarts it, or the user will).
    static let shuttingDown = TokendError(.unavailable, "tokend is shutting down; try again once it is back")

    static func refreshStillRunning(_ name: String) -> TokendError {
        TokendError(.unavailable, "the refresh is still running after the timeout; see tokenctl status \(name)")
    }

    static func importedDuringBackoff(checkedAt: Date) -> TokendError {
        TokendError(.unavailable, "the session is imported and stored, but the provider asked for a pause: it is checked at \(Timestamp.format(checkedAt))")
    }

    static func logoutNotDeleted(_ error: KeyringError, account name: String) -> TokendError {
        var mapped = error.tokendError(account: name)
        mapped.message = "logged out in memory, but the stored session could not be deleted (\(mapped.message)); run logout again once the keyring is usable"
        return mapped
    }

    static func deletedNotForgotten(_ error: KeyringError, account name: String) -> TokendError {
        var mapped = error.tokendError(account: name)
        mapped.message = "the user was deleted, but the stored session could not be removed (\(mapped.message)); run tokenctl logout \(name) once the keyring is usable"
        return mapped
    }

    /// A provider's failure for a login or management call, with the account's own commands.
    static func management(_ failure: LoginFailure, account name: String) -> TokendError {
        var error = failure.tokendError
        // `tokenctl login ACCOUNT`, `tokenctl account VERB ACCOUNT`, `tokenctl account mfa VERB ACCOUNT`.
        error.message = error.message.replacing(/(tokenctl (?:login|account(?: [a-z-]+){1,2})) ACCOUNT/) { "\($0.1) \(name)" }
            .replacing("[account.NAME.", with: "[account.\(name).")
        return error
    }
}
