
/// What tokend tells a user when it cannot do what was asked, each sentence ending in what to
/// do next; names, codes and hosts only, never a secret. These are the account's state's own;
/// the engine's (TokendServer, Engine/Advice+Engine.swift) extend this type.
public enum Advice {
    /// What an account says until its first keyring read has answered.
    public static func notReadYet(_ name: String) -> TokendError {
        TokendError(.keyringUnavailable, "the keyring item of account \"\(name)\" is still being read; try again in a moment")
    }

    /// No valid token while the provider fails: the last failure and when it is tried next.
    public static func unavailable(lastError: RefreshFailure?, retryAt: Date) -> TokendError {
        let reason = lastError?.summary ?? "the provider is unreachable"
        return TokendError(.unavailable, "no valid token and the provider is failing (\(reason)); next try at \(Timestamp.format(retryAt))")
    }

    /// Why a stored session is not used: where it came from, where the account points now, and
    /// how to resolve it. Hosts only: the API key stays out of messages and logs.
    public static func boundElsewhere(stored: String, account: some AccountSettings) -> String {
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

    /// A narrowed token asked for scopes the session never had.
    public static func neverGranted(_ missing: [String], granted: [String], account name: String) -> TokendError {
        TokendError(.badRequest, "the session of \(name) was never granted \"\(missing.joined(separator: " "))\" (it holds \"\(granted.joined(separator: " "))\"), and a narrowed token cannot be wider: ask for a subset, or add the scope to the account's scopes in config.toml and run: tokenctl login \(name)")
    }
}
