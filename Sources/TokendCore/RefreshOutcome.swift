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

    public init(refreshToken: String? = nil, idToken: String? = nil, accessToken: String? = nil, expiresIn: Double? = nil) {
        self.refreshToken = refreshToken
        self.idToken = idToken
        self.accessToken = accessToken
        self.expiresIn = expiresIn
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
}

extension IssuedTokens: CustomStringConvertible {
    public var description: String { "IssuedTokens(expiresIn: \(expiresIn.map { "\($0)" } ?? "unknown"))" }
}

extension TokenSet {
    /// The token set after a successful refresh: a missing refresh token keeps the old one
    /// (RFC 6749 §6); a missing ID or access token is dropped rather than kept as if fresh, unless
    /// its own expiry says it is still alive.
    public func merging(_ issued: IssuedTokens, at now: Date) -> TokenSet {
        let lifetimeExpiry = issued.expiresIn.map { now.addingTimeInterval($0) }
        var next = self
        next.refreshToken = issued.refreshToken ?? refreshToken
        next.issuedAt = now
        if let access = issued.accessToken {
            next.accessToken = access
            next.accessTokenExpiresAt = JWTClaims(token: access)?.expiresAt ?? lifetimeExpiry
        } else if let accessTokenExpiresAt, accessTokenExpiresAt <= now {
            next.accessToken = nil
            next.accessTokenExpiresAt = nil
        }
        if let id = issued.idToken {
            next.idToken = id
            next.idTokenExpiresAt = JWTClaims(token: id)?.expiresAt ?? lifetimeExpiry
        } else if let idTokenExpiresAt, idTokenExpiresAt <= now {
            next.idToken = nil
            next.idTokenExpiresAt = nil
        }
        return next
    }
}
