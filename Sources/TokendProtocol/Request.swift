import TokendCore

/// One request line as JSON has it (docs/protocol.md): every field of every op, each optional but
/// `op`. Clients build a `Command` instead (Command+Encoding.swift makes this from it); the daemon
/// checks this into one (Command+Decoding.swift), naming a missing or bad field in a
/// `bad_request`. Unknown fields are ignored, for forward compatibility.
public struct Request: Codable, Sendable, Equatable {
    public var op: String
    public var id: RequestID?
    public var account: String?
    /// `token`: seconds the returned token must stay valid (default 60).
    public var minValid: Double?
    /// `token`: `id` or `access` (default: the provider's, see the README).
    public var kind: TokenKind?
    /// `token`: space-separated scopes to narrow the access token to (a subset of the session's).
    public var scope: String?
    /// `token`: the API the access token is for (sent as RFC 8707 `resource`, or as configured).
    public var audience: String?
    /// `token`, `refresh`, `import`: seconds to wait for a refresh before answering `unavailable`.
    public var timeout: Double?
    /// `import`: the session to store. Only a refresh token is required.
    public var refreshToken: String?
    public var idToken: String?
    public var accessToken: String?
    /// `import`: when the imported access/ID token expires (RFC 3339), if not in its JWT.
    public var expiresAt: String?
    /// `login`: how to sign in (`browser`, `device`, `email`, `anonymous`, `custom_token`,
    /// `google`, `idp`); `account` `upgrade`: `email`, `google` or `idp`.
    public var method: String?
    /// `login`, `account upgrade` with method `idp`: the identity provider's id (`microsoft.com`).
    public var idp: String?
    /// `login`, `account upgrade` with method `idp`: sign in at the provider with the device
    /// grant instead of the browser.
    public var device: Bool?
    /// `login`, `account`: the email address to sign in, sign up, upgrade to or reset.
    public var email: String?
    /// `login` with `email`: create the user instead of signing in.
    public var create: Bool?
    /// `login`, `account upgrade`: a password or custom token. Never logged or echoed.
    public var secret: String?
    /// `login`: scopes to ask for instead of the configured ones (OpenID Connect).
    public var scopes: [String]?
    /// `account`: `show`, `verify_email`, `reset_password`, `upgrade`, `delete`, `mfa_enroll` or
    /// `mfa_remove`.
    public var action: String?
    /// `account` `delete`: must be true; without it the reply says what would be deleted.
    public var confirm: Bool?
    /// `watch`, `account show`: include profile fields (email) that are left out by default.
    public var profile: Bool?
    /// `login` (`email`, `idp`): the second factor to use when the user has several (its
    /// enrollment id); `account` `mfa_remove`: the factor to withdraw.
    public var factor: String?
    /// `login` `second_factor`, `account` `mfa_enroll`: the daemon's handle for the pending
    /// sign-in or enrollment, from the first step's answer. Single use.
    public var handle: String?
    /// `account` `mfa_enroll` with `handle`: the factor's display name (Firebase's
    /// `displayName`); absent: the daemon's default, `tokend on HOST`.
    public var name: String?

    public init(
        op: String, id: RequestID? = nil, account: String? = nil, minValid: Double? = nil, kind: TokenKind? = nil,
        timeout: Double? = nil, refreshToken: String? = nil, idToken: String? = nil, accessToken: String? = nil,
        expiresAt: String? = nil
    ) {
        self.op = op
        self.id = id
        self.account = account
        self.minValid = minValid
        self.kind = kind
        self.timeout = timeout
        self.refreshToken = refreshToken
        self.idToken = idToken
        self.accessToken = accessToken
        self.expiresAt = expiresAt
    }

    enum CodingKeys: String, CodingKey {
        case op, id, account, kind, timeout, method, idp, device, email, create, secret, scopes, action, confirm, profile, scope, audience
        case factor, handle, name
        case minValid = "min_valid"
        case refreshToken = "refresh_token"
        case idToken = "id_token"
        case accessToken = "access_token"
        case expiresAt = "expires_at"
    }
}

extension Request: CustomStringConvertible {
    /// Requests may carry tokens (`import`) and passwords (`login`): describe them without.
    public var description: String { "Request(op: \(op), account: \(account ?? "-"))" }
}

/// The ops of protocol version 1.
public enum Op: String, CaseIterable, Sendable {
    case hello, token, list, status, refresh, `import`, login, account, logout, watch
    /// Re-reads the configuration file and answers once it is applied or refused (`tokenctl
    /// reload`, the unit's `ExecReload=`): what SIGHUP does, with an answer to wait for.
    case reload
}
