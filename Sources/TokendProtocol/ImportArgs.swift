import TokendCore

/// `import`: the session to store, as the request carries it (a refresh token; optionally tokens
/// minted with it, and their expiry when their JWT does not say).
public struct ImportArgs: Sendable, Equatable {
    public var account: String
    public var refreshToken: String
    public var idToken: String?
    public var accessToken: String?
    /// RFC 3339, as sent (checked when decoded).
    public var expiresAt: String?
    public var timeout: Double

    public init(
        account: String, refreshToken: String, idToken: String? = nil, accessToken: String? = nil, expiresAt: String? = nil,
        timeout: Double = Command.defaultTimeout
    ) {
        self.account = account
        self.refreshToken = refreshToken
        self.idToken = idToken
        self.accessToken = accessToken
        self.expiresAt = expiresAt
        self.timeout = timeout
    }

    /// The session to store. A token whose expiry is unknown (neither its JWT nor `expires_at`
    /// says) is not kept: it could not be served safely anyway.
    public var tokens: TokenSet {
        let explicitExpiry = expiresAt.flatMap(Timestamp.parse)
        var tokens = TokenSet(refreshToken: refreshToken)
        if let id = idToken, let expiry = JWTClaims(token: id)?.expiresAt ?? explicitExpiry {
            tokens.idToken = id
            tokens.idTokenExpiresAt = expiry
            tokens.issuedAt = JWTClaims(token: id)?.issuedAt
        }
        if let access = accessToken, let expiry = JWTClaims(token: access)?.expiresAt ?? explicitExpiry {
            tokens.accessToken = access
            tokens.accessTokenExpiresAt = expiry
        }
        return tokens
    }
}

extension ImportArgs: CommandArguments {
    public init(_ request: FieldReader) throws(TokendError) {
        account = try request.account()
        guard let refreshToken = request.string(.refreshToken)?.trimmed, !refreshToken.isEmpty else {
            throw request.failure(.refreshToken, "is required")
        }
        self.refreshToken = refreshToken
        expiresAt = request.string(.expiresAt)
        if let text = expiresAt, Timestamp.parse(text) == nil {
            throw request.failure(.expiresAt, "must be an RFC 3339 time like 2026-01-02T03:04:05Z")
        }
        idToken = request.string(.idToken)
        accessToken = request.string(.accessToken)
        timeout = try request.timeout()
    }

    public func write(to fields: inout RequestFields) {
        fields.set(.account, account)
        fields.set(.refreshToken, refreshToken)
        fields.set(.idToken, idToken)
        fields.set(.accessToken, accessToken)
        fields.set(.expiresAt, expiresAt)
        fields.set(.timeout, timeout)
    }
}
