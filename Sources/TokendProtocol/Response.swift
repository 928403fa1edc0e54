import TokendCore

/// The protocol version this build speaks (docs/protocol.md).
public let protocolVersion = 1

/// The release of tokend and tokenctl, shared so that `tokenctl --version` and `hello` agree.
public let tokendVersion = "0.1.0"

/// One response line. Flat, with only the fields of the op that produced it present, so that a
/// shell user can read it with `jq .token` and a client can decode every op with one type.
public struct Response: Codable, Sendable, Equatable {
    public var id: RequestID?
    public var ok: Bool
    public var error: TokendError?

    // hello
    public var `protocol`: Int?
    public var version: String?
    public var capabilities: [String]?

    // token, refresh, import
    public var account: String?
    public var token: String?
    public var kind: TokenKind?
    public var expiresAt: String?
    public var expiresIn: Int?

    // list, status
    public var accounts: [AccountStatus]?

    // watch
    public var watching: [String]?

    // login (its last line), account upgrade
    /// `done` on the line that ends a successful `login`, after its progress lines.
    public var progress: String?
    /// How the user signed in: `password`, `anonymous`, `custom`, `google.com`, `oidc`.
    public var signInProvider: String?
    /// `login`, `account upgrade`: true when the session replaced was another user's (a
    /// different `sub` or Firebase uid): the account now answers for someone else.
    public var replacedOtherUser: Bool?

    // logout: `revoked`, `unsupported` or `failed` (with `warning` saying why), absent when
    // there was no session to revoke.
    public var revocation: String?
    public var warning: String?
    /// logout: an import or login issued after the logout stored a session while it ran; that
    /// newer session is kept.
    public var keptNewerSession: Bool?
    // account
    /// `account show`: the user and the current ID token's claims.
    public var user: AccountProfile?
    /// `account verify_email`, `reset_password`: where the email went.
    public var email: String?
    /// `account mfa_enroll` without a handle: the TOTP secret to give the authenticator app.
    public var enrollment: SecondFactorEnrollment?
    // reload
    /// The configuration file the daemon read.
    public var config: String?
    /// The accounts the applied configuration names, sorted.
    public var configured: [String]?

    public init(id: RequestID? = nil, ok: Bool = true) {
        self.id = id
        self.ok = ok
    }

    public static func failure(_ error: TokendError, id: RequestID? = nil) -> Response {
        var response = Response(id: id, ok: false)
        response.error = error
        return response
    }

    enum CodingKeys: String, CodingKey {
        case id, ok, error, `protocol`, version, capabilities, account, token, kind, accounts, watching, progress, revocation, warning, user, email
        case enrollment, config, configured
        case signInProvider = "sign_in_provider"
        case replacedOtherUser = "replaced_other_user"
        case keptNewerSession = "kept_newer_session"
        case expiresAt = "expires_at"
        case expiresIn = "expires_in"
    }
}

extension Response: CustomStringConvertible {
    public var description: String { "Response(ok: \(ok), error: \(error.map { "\($0)" } ?? "none"))" }
}

/// An account as `list` and `status` show it: never a secret.
public struct AccountStatus: Codable, Sendable, Equatable {
    public var name: String
    public var provider: String
    /// `active`, `refreshing`, `retrying`, `unavailable`, `stale`, `needs_login`, `config_error`,
    /// `waiting_for_keyring`.
    public var state: String
    public var expiresAt: String?
    public var expiresIn: Int?
    public var lastRefresh: String?
    public var nextRefresh: String?
    public var lastError: RefreshFailure?
    /// Why the account is in its state, in words that say what to do (for `needs_login` & co).
    public var message: String?
    /// `available`, `locked` or `unavailable`: whether this account's session is safely stored.
    public var keyring: String
    /// True while the session held in memory has not reached the keyring yet.
    public var unsaved: Bool?
    /// Where the account's session is kept: `secret-service`, `tpm2` or `pass` (absent from a
    /// daemon that predates stores).
    public var store: String?
    /// Present when `store` is not the one the configuration names for the account: a `store
    /// move` put the session there, and a move (not the configuration) decides where it is kept.
    public var storeNote: String?
    /// The account's `git_hosts` and `git_username`, for `tokenctl git-credential`.
    public var gitHosts: [String]?
    public var gitUsername: String?
    /// The account's `registry_hosts` and `registry_username`, for `docker-credential-tokend`.
    public var registryHosts: [String]?
    public var registryUsername: String?

    public init(name: String, provider: String, state: String, keyring: String) {
        self.name = name
        self.provider = provider
        self.state = state
        self.keyring = keyring
    }

    enum CodingKeys: String, CodingKey {
        case name, provider, state, message, keyring, unsaved, store
        case storeNote = "store_note"
        case expiresAt = "expires_at"
        case expiresIn = "expires_in"
        case lastRefresh = "last_refresh"
        case nextRefresh = "next_refresh"
        case lastError = "last_error"
        case gitHosts = "git_hosts"
        case gitUsername = "git_username"
        case registryHosts = "registry_hosts"
        case registryUsername = "registry_username"
    }
}

/// A line streamed to `watch` subscribers. Events never carry tokens.
public struct Event: Codable, Sendable, Equatable {
    public enum Kind: String, Codable, Sendable, CaseIterable {
        case refreshed, refreshFailed = "refresh_failed", needsLogin = "needs_login", loggedOut = "logged_out"
        case imported, configError = "config_error", keyringLocked = "keyring_locked", keyringUnlocked = "keyring_unlocked"
        case keyringUnavailable = "keyring_unavailable", configReloaded = "config_reloaded"
        /// The Secret Service stopped answering in time (a dialog may wait for the user): status `needs_confirmation`.
        case keyringNeedsConfirmation = "keyring_needs_confirmation"
        /// Auth state: a login installed a new session (`sign_in_provider` says how).
        case signedIn = "signed_in"
        /// Auth state: the session ended by the user's hand (`reason`: `logout`, `deleted`).
        case signedOut = "signed_out"
        /// Auth state: the same user, changed (an anonymous user upgraded, an email verified).
        case userChanged = "user_changed"
    }
    public var event: Kind
    public var account: String?
    /// When it happened (RFC 3339 UTC).
    public var at: String
    public var expiresAt: String?
    public var error: RefreshFailure?
    public var retryAt: String?
    /// `signed_in`, `user_changed`: how the user signed in.
    public var signInProvider: String?
    /// `signed_out`, `user_changed`: why.
    public var reason: String?
    /// `signed_in`, `user_changed`: the user's email, only for a watch that asked for `profile`.
    public var email: String?
    /// `signed_in`: the session replaced belonged to another user.
    public var replacedOtherUser: Bool?

    public init(event: Kind, account: String?, at: String) {
        self.event = event
        self.account = account
        self.at = at
    }

    enum CodingKeys: String, CodingKey {
        case event, account, at, error, reason, email
        case expiresAt = "expires_at"
        case retryAt = "retry_at"
        case signInProvider = "sign_in_provider"
        case replacedOtherUser = "replaced_other_user"
    }
}

/// A user as `account show` describes it: the provider's profile and the current ID token's
/// claims. Never a token.
public struct AccountProfile: Codable, Sendable, Equatable {
    public var uid: String
    public var email: String?
    public var emailVerified: Bool?
    public var displayName: String?
    /// How the current session signed in (`password`, `anonymous`, `custom`, `google.com`).
    public var signInProvider: String?
    /// Every sign-in method linked to the user.
    public var providers: [String]
    /// The project the ID token is for (its `aud`).
    public var project: String?
    /// The Identity Platform tenant the user belongs to (the ID token's `firebase.tenant`).
    public var tenant: String?
    /// When the user last signed in (the ID token's `auth_time`), RFC 3339.
    public var authTime: String?
    public var createdAt: String?
    public var lastLoginAt: String?
    public var disabled: Bool?
    /// Claims set by the project's backend (everything but the standard ones).
    public var customClaims: [String: AnyJSON]?
    /// The user's enrolled second factors (`mfaInfo`); nil when none.
    public var factors: [SecondFactor]?

    public init(uid: String, providers: [String]) {
        self.uid = uid
        self.providers = providers
    }

    enum CodingKeys: String, CodingKey {
        case uid, email, providers, project, tenant, disabled, factors
        case emailVerified = "email_verified"
        case displayName = "display_name"
        case signInProvider = "sign_in_provider"
        case authTime = "auth_time"
        case createdAt = "created_at"
        case lastLoginAt = "last_login_at"
        case customClaims = "custom_claims"
    }
}

/// A progress line of a `login` stream: what the user has to do now. Like events, progress
/// lines carry no `ok`; the stream ends with one response line that does. Never a token, code,
/// verifier or password.
public struct LoginProgress: Codable, Sendable, Equatable {
    public enum Step: String, Codable, Sendable {
        case openURL = "open_url", userCode = "user_code", waiting
        /// The user has a second factor: the stream ends `needs_login` `SECOND_FACTOR_REQUIRED`,
        /// and the client finishes with `login` method `second_factor`, `handle` and the code.
        case secondFactor = "second_factor"
    }
    public var id: RequestID?
    public var progress: Step
    public var account: String
    /// `open_url`: the page to open in a browser.
    public var url: String?
    /// `user_code`: where to go and what to type (the device grant).
    public var verificationURI: String?
    public var verificationURIComplete: String?
    public var userCode: String?
    public var expiresIn: Int?
    /// `waiting`: for what.
    public var message: String?
    /// `second_factor`: the user's factors, the one to answer (`factor`, an enrollment id), and
    /// the single-use handle that finishes the sign-in (5 minutes).
    public var factors: [SecondFactor]?
    public var factor: String?
    public var handle: String?

    public init(id: RequestID?, progress: Step, account: String) {
        self.id = id
        self.progress = progress
        self.account = account
    }

    enum CodingKeys: String, CodingKey {
        case id, progress, account, url, message, factors, factor, handle
        case verificationURI = "verification_uri"
        case verificationURIComplete = "verification_uri_complete"
        case userCode = "user_code"
        case expiresIn = "expires_in"
    }
}
