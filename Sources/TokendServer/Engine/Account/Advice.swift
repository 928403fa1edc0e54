import TokendCore
import TokendKeyring
import TokendProtocol
import TokendProviders

/// What the engine tells a user when it cannot do what was asked: every such sentence in one
/// place, each ending in what to do next. Names, codes and hosts only, never a secret.
enum Advice {
    /// No account by that name: usually a typo, but with a broken configuration file (and no good
    /// one loaded yet) the file is to blame, and saying so saves a confused user.
    static func missingAccount(_ name: String, configurationProblem: ConfigurationError?) -> TokendError {
        if let configurationProblem { return TokendError(.configError, configurationProblem.description) }
        return TokendError(.unknownAccount, "no account named \"\(name)\" is configured")
    }

    /// What an account says until its first keyring read has answered.
    static func notReadYet(_ name: String) -> TokendError {
        TokendError(.keyringUnavailable, "the keyring item of account \"\(name)\" is still being read; try again in a moment")
    }

    /// No valid token while the provider fails: the last failure and when it is tried next.
    static func unavailable(lastError: RefreshFailure?, retryAt: Date) -> TokendError {
        let reason = lastError?.summary ?? "the provider is unreachable"
        return TokendError(.unavailable, "no valid token and the provider is failing (\(reason)); next try at \(Timestamp.format(retryAt))")
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

    /// Why a stored session is not used: where it came from, where the account points now, and
    /// how to resolve it. Hosts only: the API key stays out of messages and logs.
    static func boundElsewhere(stored: String, account: AccountConfiguration) -> String {
        func host(_ endpoint: String) -> String {
            endpoint.split(separator: " ").first { $0.hasPrefix("http") }.map(String.init) ?? "another endpoint"
        }
        let storedHost = host(stored)
        let configuredHost = host(account.endpoint)
        let what = storedHost == configuredHost ? "another project or client at \(storedHost)" : storedHost
        return "the stored session was issued by \(what), but the account now points at \(configuredHost); nothing was sent. "
            + "Restore the configuration (and check FIREBASE_AUTH_EMULATOR_HOST in tokend's environment), "
            + "or run `tokenctl import \(account.name)` to replace the session"
    }

    /// A provider's failure for a login or management call, with the account's own commands.
    static func management(_ failure: LoginFailure, account name: String) -> TokendError {
        var error = failure.tokendError
        // `tokenctl login ACCOUNT`, `tokenctl account VERB ACCOUNT`, `tokenctl account mfa VERB ACCOUNT`.
        error.message = error.message.replacing(/(tokenctl (?:login|account(?: [a-z-]+){1,2})) ACCOUNT/) { "\($0.1) \(name)" }
            .replacing("[account.NAME.", with: "[account.\(name).")
        return error
    }

    /// A narrowed token asked for scopes the session never had.
    static func neverGranted(_ missing: [String], granted: [String], account name: String) -> TokendError {
        TokendError(.badRequest, "the session of \(name) was never granted \"\(missing.joined(separator: " "))\" (it holds \"\(granted.joined(separator: " "))\"), and a narrowed token cannot be wider: ask for a subset, or add the scope to the account's scopes in config.toml and run: tokenctl login \(name)")
    }
}
