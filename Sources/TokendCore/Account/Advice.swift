
/// Every sentence tokend says about an account when it cannot do what was asked: the account's
/// state's and the engine's (TokendServer) alike, here and nowhere else, each ending in what to do
/// next. Names, codes and hosts only, never a secret. Its arguments are the core's types (the
/// daemon passes names and already-mapped errors), so the one type lives in the one module every
/// other reaches.
public enum Advice {
    // MARK: - The account and the configuration

    /// No account by that name: usually a typo, but with a broken configuration file (and no good
    /// one loaded yet: `configurationProblem`, its description) the file is to blame, and saying
    /// so saves a confused user.
    public static func missingAccount(_ name: String, configurationProblem: String?) -> TokendError {
        if let configurationProblem { return configurationBroken(configurationProblem) }
        return TokendError(.unknownAccount, "no account named \"\(name)\" is configured")
    }

    /// The configuration file is broken and no good one was loaded: its own description (file,
    /// line, key) says what to fix.
    public static func configurationBroken(_ description: String) -> TokendError {
        TokendError(.configError, description)
    }

    /// The reason an account without a stored session gives every request (`needs_login`).
    static let noSessionStored = "no session is stored for this account"

    /// What an account says until its first keyring read has answered.
    public static func notReadYet(_ name: String) -> TokendError {
        TokendError(.keyringUnavailable, "the keyring item of account \"\(name)\" is still being read; try again in a moment")
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

    // MARK: - A token request

    /// No valid token while the provider fails: the last failure and when it is tried next.
    public static func unavailable(lastError: RefreshFailure?, retryAt: Date) -> TokendError {
        let reason = lastError?.summary ?? "the provider is unreachable"
        return TokendError(.unavailable, "no valid token and the provider is failing (\(reason)); next try at \(Timestamp.format(retryAt))")
    }

    public static func noFreshToken(within timeout: Double, scope: TokenScope? = nil) -> TokendError {
        let seconds = Int(saturating: timeout)
        guard let scope else { return TokendError(.unavailable, "no fresh token within \(seconds) s: the refresh is still running; try again") }
        return TokendError(.unavailable, "no token for \(scope) within \(seconds) s: a refresh is still running; try again")
    }

    /// A forced refresh ended without new tokens and without a reason of its own.
    static let refreshIncomplete = TokendError(.unavailable, "the refresh did not complete; try again")

    public static func refreshStillRunning(_ name: String) -> TokendError {
        TokendError(.unavailable, "the refresh is still running after the timeout; see tokenctl status \(name)")
    }

    /// A fresh token can promise only `span` seconds (its lifetime less the refresh margin).
    static func unsatisfiable(kind: TokenKind, minValid: Double, span: Double, tokens: TokenSet?) -> TokendError {
        let lifetime = tokens.flatMap { set in set.issuedAt.flatMap { set.expiresAt?.timeIntervalSince($0) } } ?? span
        return TokendError(.badRequest, "min_valid \(Int(saturating: minValid)) s is longer than a fresh \(kind.rawValue) token can promise (\(Int(saturating: max(0, span))) s of the \(Int(saturating: lifetime)) s it lives: the rest is the refresh margin); ask for less")
    }

    /// A fresh refresh still cannot give `minValid` seconds of a `kind` token.
    static func unsatisfiable(kind: TokenKind, minValid: Double, tokens: TokenSet?, now: Date) -> TokendError {
        guard let (_, expiresAt) = tokens?.token(kind) else {
            return TokendError(.badRequest, "the provider issued no \(kind.rawValue) token on refresh; ask for the other kind")
        }
        let left = Int(saturating: expiresAt.timeIntervalSince(now))
        return TokendError(.badRequest, "min_valid \(Int(saturating: minValid)) s is longer than a fresh \(kind.rawValue) token lives (\(left) s); ask for less")
    }

    /// A request still waiting when the daemon stops (systemd restarts it, or the user will).
    public static let shuttingDown = TokendError(.unavailable, "tokend is shutting down; try again once it is back")

    // MARK: - A narrowed token

    static func cannotNarrow(kindName: String) -> TokendError {
        TokendError(.badRequest, "\(kindName) accounts cannot narrow a token to a scope or an audience: ask without them")
    }

    static let onlyAccessTokensNarrow = TokendError(
        .badRequest, "scope and audience narrow access tokens, not ID tokens: ask for kind access, or without scope and audience")

    /// A narrowed token asked for scopes the session never had.
    static func neverGranted(_ missing: [String], granted: [String], account name: String) -> TokendError {
        TokendError(.badRequest, "the session of \(name) was never granted \"\(missing.joined(separator: " "))\" (it holds \"\(granted.joined(separator: " "))\"), and a narrowed token cannot be wider: ask for a subset, or add the scope to the account's scopes in config.toml and run: tokenctl login \(name)")
    }

    static func grantWithoutAccessToken(_ scope: TokenScope) -> TokendError {
        TokendError(.configError, "the provider answered the grant for \(scope) without an access token")
    }

    static func grantWider(_ scope: TokenScope, also wider: [String]) -> TokendError {
        TokendError(.configError, "the provider answered the grant for \(scope) with a wider token (also \"\(wider.joined(separator: " "))\"), which tokend does not hand out: the provider may not narrow scopes on refresh")
    }

    static func grantRefused(_ scope: TokenScope, _ failure: RefreshFailure) -> TokendError {
        TokendError(.badRequest, "the provider refuses \(scope) (\(failure.summary)): ask for a scope the session was granted and an audience the provider serves")
    }

    // MARK: - The user's commands

    /// One interactive login per account at a time.
    static func loginAlreadyWaiting(_ name: String) -> TokendError {
        TokendError(.unavailable, "a login for \(name) is already waiting for the user; finish or cancel it (Ctrl-C in its tokenctl) first")
    }

    /// A login by a method the account's provider does not offer (`offered`); nil when it does.
    public static func methodNotOffered(_ method: String, offered: [String], account name: String, kind: String) -> TokendError? {
        guard !offered.contains(method) else { return nil }
        return TokendError(
            .badRequest,
            "\(name) is a \(kind) account, which signs in with method \(offered.joined(separator: " or ")), not \(method) (see tokenctl login --help)")
    }

    public static let signInWithoutRefreshToken = TokendError(
        .internal, "the provider signed the user in but issued no refresh token; tokend cannot keep such a session")

    public static func repointedDuringSignIn(_ name: String) -> TokendError {
        TokendError(.configError, "\(name)'s configuration changed while this sign-in ran, so its session was not kept; run tokenctl login \(name) again")
    }

    public static func overtakenDuringSignIn(_ name: String) -> TokendError {
        TokendError(.unavailable, "a newer command changed \(name) while this sign-in ran, so its session was not kept; see tokenctl status \(name)")
    }

    public static func importedDuringBackoff(checkedAt: Date) -> TokendError {
        TokendError(.unavailable, "the session is imported and stored, but the provider asked for a pause: it is checked at \(Timestamp.format(checkedAt))")
    }

    /// The reason a logged-out account gives every request (`needs_login`).
    public static func loggedOut(_ name: String) -> String {
        "logged out; run: tokenctl login \(name)"
    }

    /// The reason an account whose user was deleted gives every request (`needs_login`).
    public static func userDeleted(_ name: String) -> String {
        "the user was deleted; sign in again: tokenctl login \(name)"
    }

    public static func logoutNotDeleted(_ error: some StoredSessionFailure, account name: String) -> TokendError {
        var mapped = error.tokendError(account: name)
        mapped.message = "logged out in memory, but the stored session could not be deleted (\(mapped.message)); run logout again once the keyring is usable"
        return mapped
    }

    public static func deletedNotForgotten(_ error: some StoredSessionFailure, account name: String) -> TokendError {
        var mapped = error.tokendError(account: name)
        mapped.message = "the user was deleted, but the stored session could not be removed (\(mapped.message)); run tokenctl logout \(name) once the keyring is usable"
        return mapped
    }

    // MARK: - Managing the user (Firebase)

    /// A provider's failure for a login or management call (`error`, as the provider words it),
    /// with the account's own commands in place of the provider's placeholders.
    public static func management(_ error: TokendError, account name: String) -> TokendError {
        var error = error
        // `tokenctl login ACCOUNT`, `tokenctl account VERB ACCOUNT`, `tokenctl account mfa VERB ACCOUNT`.
        error.message = error.message.replacing(/(tokenctl (?:login|account(?: [a-z-]+){1,2})) ACCOUNT/) { "\($0.1) \(name)" }
            .replacing("[account.NAME.", with: "[account.\(name).")
        return error
    }

    public static func notManaged(_ name: String, kind: String) -> TokendError {
        TokendError(.badRequest, "\(name) is a \(kind) account; account management is for Firebase accounts")
    }

    public static func noEmailToReset(_ name: String) -> TokendError {
        TokendError(.badRequest, "\(name) holds no session with an email address; name one: tokenctl account reset-password \(name) --email ADDRESS")
    }

    /// A user change answered without a refresh token; `next`: the command that signs in again.
    public static func changedWithoutRefreshToken(next: String) -> TokendError {
        TokendError(.internal, "the provider changed the user but issued no refresh token; sign in again: \(next)")
    }

    public static func anotherUsersSession(next: String) -> TokendError {
        TokendError(.internal, "the provider answered with another user's session, which was not kept; sign in again: \(next)")
    }

    /// Only an anonymous user can be upgraded; `how`: the permanent user's sign-in provider.
    public static func alreadyPermanent(_ name: String, signedInWith how: String) -> TokendError {
        TokendError(.badRequest, "\(name) is already a permanent user (signed in with \(how)); upgrade is for anonymous users")
    }

    public static func noUserToDelete(_ name: String) -> TokendError {
        TokendError(.needsLogin, "\(name) holds no session, so there is no user to delete; sign in first: tokenctl login \(name)")
    }
}
