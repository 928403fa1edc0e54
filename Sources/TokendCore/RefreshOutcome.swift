/// What a provider answered to one refresh: the type that decides what happens to the account.
public enum RefreshOutcome: Sendable, Equatable {
    /// New tokens. Fields the provider left out are nil and are merged, not blindly copied.
    case refreshed(IssuedTokens)
    /// Worth retrying later: network trouble, 5xx, 408, 429, rate limits. Never touches the
    /// refresh token.
    case transient(RefreshFailure, retryAfter: Double?)
    /// The provider revoked or expired the session: only a new login or import helps.
    case needsLogin(RefreshFailure)
    /// The account's configuration is wrong (client, API key, project): "log in again" would
    /// be a lie, so it is reported as a configuration error.
    case misconfigured(RefreshFailure)
}

/// Tokens as a provider issued them, before they are merged into the held `TokenSet`.
public struct IssuedTokens: Sendable, Equatable {
    public var refreshToken: String?
    public var idToken: String?
    public var accessToken: String?
    /// Lifetime of the access token (and of the ID token when no `exp` claim says otherwise).
    public var expiresIn: Double?
    /// The scopes the provider says it granted (OAuth `scope`), when it says.
    public var scopes: [String]?
    /// The provider's clock when it answered (its `Date` header), when it said: a JWT's `exp`
    /// less this is the token's life left by the clock that will judge it.
    public var providerTime: Date?

    public init(
        refreshToken: String? = nil, idToken: String? = nil, accessToken: String? = nil, expiresIn: Double? = nil, scopes: [String]? = nil,
        providerTime: Date? = nil
    ) {
        self.refreshToken = refreshToken
        self.idToken = idToken
        self.accessToken = accessToken
        self.expiresIn = expiresIn
        self.scopes = scopes
        self.providerTime = providerTime
    }
}

/// Why a refresh failed, in words safe to log and show: never a token.
public struct RefreshFailure: Error, Sendable, Equatable, Codable {
    /// The provider's own code (`TOKEN_EXPIRED`, `invalid_grant`, `http_503`, `timeout`, …).
    public var code: String
    /// The provider's message, or ours; already free of secrets.
    public var message: String

    public init(code: String, message: String) {
        self.code = code
        self.message = message
    }

    /// Code and message once: Firebase's message repeats its code (`QUOTA_EXCEEDED : detail`).
    public var summary: String {
        message == code || message.hasPrefix(code + " ") || message.hasPrefix(code + ":") ? message : "\(code): \(message)"
    }
}

extension IssuedTokens: CustomStringConvertible {
    public var description: String { "IssuedTokens(expiresIn: \(expiresIn.map { "\($0)" } ?? "unknown"))" }
}

extension TokenSet {
    /// Providers count lifetimes in whole seconds from a truncated `iat`: a token may be up to a
    /// second older than its lifetime says, so that second is taken off.
    public static let lifetimeGranularity: Double = 1

    /// The token set after a successful refresh: a missing refresh token keeps the old one
    /// (RFC 6749 §6); a missing ID or access token is dropped rather than kept as if fresh, unless
    /// its own expiry says it is still alive.
    ///
    /// Expiries are lifetimes — the shorter of `expires_in` and the JWT's own `exp − iat` —
    /// counted from `sentAt`, when we sent the request: the token cannot be older than that, so
    /// network latency never makes us overestimate its life. Relative lifetimes make a skewed
    /// clock on either side harmless; the shorter one guards against a cached token. With the
    /// provider's `Date`, `exp` less that is a third bound: a cached token issued long ago has
    /// only what is left of its life by the provider's clock (docs/security.md, "Provider answers").
    public func merging(_ issued: IssuedTokens, sentAt: Date, at now: Date) -> TokenSet {
        func expiry(of token: String) -> Date? {
            let claims = JWTClaims(token: token)
            let jwtLifetime = claims.flatMap { claims in
                claims.expiresAt.flatMap { expiresAt in claims.issuedAt.map { expiresAt.timeIntervalSince($0) } }
            }
            let jwtLeft = claims?.expiresAt.flatMap { expiresAt in issued.providerTime.map { expiresAt.timeIntervalSince($0) } }
            if let lifetime = [issued.expiresIn, jwtLifetime, jwtLeft].compactMap({ $0 }).min() {
                return sentAt.addingTimeInterval(lifetime - Self.lifetimeGranularity)
            }
            return claims?.expiresAt
        }
        /// One kind of token after the answer: the issued one with its lifetime, else the held
        /// one only while it still lives.
        func after(_ issuedToken: String?, held: String?, heldExpiry: Date?) -> (String?, Date?) {
            if let issuedToken { return (issuedToken, expiry(of: issuedToken)) }
            if let heldExpiry, heldExpiry > now { return (held, heldExpiry) }
            return (nil, nil)
        }
        var next = self
        next.refreshToken = issued.refreshToken ?? refreshToken
        next.issuedAt = sentAt
        (next.accessToken, next.accessTokenExpiresAt) = after(issued.accessToken, held: accessToken, heldExpiry: accessTokenExpiresAt)
        (next.idToken, next.idTokenExpiresAt) = after(issued.idToken, held: idToken, heldExpiry: idTokenExpiresAt)
        return next
    }
}

extension RefreshFailure {
    /// What Google refuses the key (or its project) for, and the fix.
    public struct KeyRefusal: Sendable, Equatable {
        public var what: String
        public var fix: String
    }

    /// The fix for a key whose restrictions refuse tokend (Google Cloud console, Credentials).
    static let restrictionFix = "use a key with no application restriction whose API restrictions allow the Identity Toolkit API and the Token Service API (Google Cloud console, APIs & Services, Credentials)"

    /// The fix for a key of a mobile app: the project's Web API key has no app restriction.
    static let appKeyFix = "use the project's Web API key (Firebase console, Project settings, General), or another key with no application restriction whose API restrictions allow the Identity Toolkit API and the Token Service API"

    /// Every `google.rpc.ErrorInfo.reason` (googleapis `google/api/error_reason.proto`,
    /// `ErrorReason`) that refuses the API key or the Google Cloud project it belongs to, not the
    /// session: answered 403 on refresh and sign-in alike. The session is kept, and a later
    /// request tries it again once the key or project is fixed in the console, which tokend cannot
    /// see. `API_KEY_INVALID` is not here: a wrong key is fixed in config.toml. Quota reasons are
    /// transient (`RefreshClassifier.googleTransientReasons`).
    public static let apiKeyRefusals: [String: KeyRefusal] = [
        "API_KEY_HTTP_REFERRER_BLOCKED": KeyRefusal(what: "the account's api_key is restricted to HTTP referrers, and tokend sends none", fix: restrictionFix),
        "API_KEY_IP_ADDRESS_BLOCKED": KeyRefusal(what: "the account's api_key is restricted to IP addresses that do not include this machine's", fix: restrictionFix),
        "API_KEY_SERVICE_BLOCKED": KeyRefusal(what: "the account's api_key is restricted to APIs that do not include this one", fix: restrictionFix),
        // The key of an app's google-services.json / GoogleService-Info.plist: what users paste.
        "API_KEY_ANDROID_APP_BLOCKED": KeyRefusal(
            what: "the account's api_key is restricted to Android apps (the key of an app's google-services.json), and tokend is none",
            fix: appKeyFix),
        "API_KEY_IOS_APP_BLOCKED": KeyRefusal(
            what: "the account's api_key is restricted to iOS apps (the key of an app's GoogleService-Info.plist), and tokend is none",
            fix: appKeyFix),
        "SERVICE_DISABLED": KeyRefusal(
            what: "the API is disabled in the Google Cloud project of the account's api_key",
            fix: "enable the Identity Toolkit API and the Token Service API there (Google Cloud console, APIs & Services, Library), or use the Web API key of the account's own Firebase project"),
        "BILLING_DISABLED": KeyRefusal(
            what: "the billing account of the api_key's Google Cloud project is disabled",
            fix: "the project's owner must enable billing again (Google Cloud console, Billing)"),
        "CONSUMER_SUSPENDED": KeyRefusal(
            what: "the api_key's Google Cloud project is suspended",
            fix: "the project's owner must settle the suspension (Google Cloud console)"),
        "CONSUMER_INVALID": KeyRefusal(
            what: "the api_key's Google Cloud project does not exist (deleted, or the key is not a project's)",
            fix: "copy the Web API key of the account's Firebase project (Project settings, General) into config.toml"),
    ]

    /// This failure is one of `apiKeyRefusals`, whose code is its reason.
    public var isAPIKeyRefusal: Bool { Self.apiKeyRefusals[code] != nil }
}
