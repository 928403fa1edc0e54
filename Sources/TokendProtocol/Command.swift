import TokendCore

// The protocol's ops as types, for both ends: tokenctl and the credential helpers build a
// `Command` and send its line (Command+Encoding.swift); the daemon decodes a line into a
// `Request` and checks it into a `Command` (Command+Decoding.swift, every field rule in one
// place). Each op's arguments keep what the wire carries (a field's absence where the daemon
// supplies a default), so a command encodes to the line it came from, field for field.

/// A request, decoded and checked, or about to be sent: what an op's responder receives and
/// what tokenctl sends.
public enum Command: Sendable, Equatable {
    case hello
    case token(TokenArgs)
    /// `list` and `status` answer alike; both may name one account (docs/protocol.md).
    case list(StatusArgs)
    case status(StatusArgs)
    case refresh(RefreshArgs)
    case `import`(ImportArgs)
    case login(LoginArgs)
    case account(AccountArgs)
    case logout(LogoutArgs)
    case watch(WatchArgs)
    /// Re-read the configuration file; no arguments.
    case reload

    public var op: Op {
        switch self {
        case .hello: .hello
        case .token: .token
        case .list: .list
        case .status: .status
        case .refresh: .refresh
        case .import: .import
        case .login: .login
        case .account: .account
        case .logout: .logout
        case .watch: .watch
        case .reload: .reload
        }
    }

    /// The account the command names, if any.
    public var account: String? {
        switch self {
        case .hello, .reload: nil
        case .token(let args): args.account
        case .list(let args), .status(let args): args.account
        case .refresh(let args): args.account
        case .import(let args): args.account
        case .login(let args): args.account
        case .account(let args): args.account
        case .logout(let args): args.account
        case .watch(let args): args.account
        }
    }

    /// Default wait for a refresh when a request names no `timeout`: long enough for a slow
    /// provider (HTTP deadline 10 s plus a keyring write), short enough for an interactive shell.
    public static let defaultTimeout: Double = 30
    /// Upper bound on a request's `timeout`: nothing should hold a connection for longer.
    public static let maximumTimeout: Double = 300
}

extension Command: CustomStringConvertible {
    /// `import` carries tokens and `login` passwords: describe a command by its op alone.
    public var description: String { "Command(\(op.rawValue))" }
}

/// `token`: a bearer token for `account` that stays valid for `minValid` seconds.
public struct TokenArgs: Sendable, Equatable {
    public var account: String
    /// `min_valid` as the request gave it; nil: `defaultMinValid`.
    public var requestedMinValid: Double?
    /// Nil: the account's default kind.
    public var kind: TokenKind?
    public var timeout: Double
    /// `scope` and `audience` as the request gave them (checked by `TokenScope` when decoded).
    public var scope: String?
    public var audience: String?

    public init(
        account: String, minValid: Double? = nil, kind: TokenKind? = nil, timeout: Double = Command.defaultTimeout, scope: String? = nil,
        audience: String? = nil
    ) {
        self.account = account
        self.requestedMinValid = minValid
        self.kind = kind
        self.timeout = timeout
        self.scope = scope
        self.audience = audience
    }

    /// The narrower scopes and/or audience asked for; nil: the account's own token. Parsed where
    /// it is read (the daemon), so a client and the plain `token` path never pay for it; a decoded
    /// command's were checked (Command+Decoding.swift), so a nil here is never a refusal.
    public var narrowing: TokenScope? {
        guard scope != nil || audience != nil else { return nil }
        return try? TokenScope(scope: scope, audience: audience)
    }

    /// Seconds the token must stay valid.
    public var minValid: Double { requestedMinValid ?? Self.defaultMinValid }
}

/// `list`, `status`: one account, or all when nil.
public struct StatusArgs: Sendable, Equatable {
    public var account: String?

    public init(account: String? = nil) {
        self.account = account
    }
}

public struct RefreshArgs: Sendable, Equatable {
    public var account: String
    public var timeout: Double

    public init(account: String, timeout: Double = Command.defaultTimeout) {
        self.account = account
        self.timeout = timeout
    }
}

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

/// `login`: how to sign in, with what the method needs. Secrets are never described.
public struct LoginArgs: Sendable, Equatable {
    public var account: String
    /// As sent: `google` stays `google` (the daemon signs in with `idp` google.com).
    public var method: LoginMethod
    public var email: String?
    /// Method `email`: sign up instead of signing in.
    public var create: Bool
    /// A password or custom token. Never logged or echoed.
    public var secret: String?
    /// Scopes to ask for instead of the configured ones (OpenID Connect).
    public var scopes: [String]?
    /// How long the user has to finish.
    public var timeout: Double
    /// Methods `idp` and `google`: the identity provider's id (`google.com` for `google`).
    public var identityProvider: String?
    /// Methods `idp` and `google`: the provider's device grant instead of the browser.
    public var device: Bool
    /// Methods `email`, `google`, `idp`: the second factor to use when the user has several.
    public var factor: String?
    /// Method `second_factor`: the daemon's handle for the pending sign-in (the code is `secret`).
    public var handle: String?

    public init(
        account: String, method: LoginMethod, email: String? = nil, create: Bool = false, secret: String? = nil, scopes: [String]? = nil,
        timeout: Double = SharedDefaults.loginTimeout, identityProvider: String? = nil, device: Bool = false,
        factor: String? = nil, handle: String? = nil
    ) {
        self.account = account
        self.method = method
        self.email = email
        self.create = create
        self.secret = secret
        self.scopes = scopes
        self.timeout = timeout
        self.identityProvider = identityProvider
        self.device = device
        self.factor = factor
        self.handle = handle
    }
}

public struct LogoutArgs: Sendable, Equatable {
    public var account: String

    public init(account: String) {
        self.account = account
    }
}

public struct WatchArgs: Sendable, Equatable {
    /// One account's events, or every account's when nil.
    public var account: String?
    /// Include profile fields (email) in events.
    public var profile: Bool

    public init(account: String? = nil, profile: Bool = false) {
        self.account = account
        self.profile = profile
    }
}

/// `account`: one Firebase account-management action.
public struct AccountArgs: Sendable, Equatable {
    public enum Action: Sendable, Equatable {
        case show(timeout: Double)
        case verifyEmail(timeout: Double)
        /// `email` nil: the session's own address.
        case resetPassword(email: String?)
        case upgradeWithEmail(email: String, password: String, timeout: Double)
        /// A sign-in at an identity provider (browser, or its device grant), streamed like a login.
        case upgradeWithIdentityProvider(String, device: Bool, timeout: Double)
        /// `confirmed` false: answer what would be deleted instead.
        case delete(confirmed: Bool, timeout: Double)
        /// `mfa_enroll` without a handle: start a TOTP enrollment.
        case startSecondFactorEnrollment(timeout: Double)
        /// `mfa_enroll` with the handle, the code and the factor's display name (nil: the
        /// daemon's default).
        case finishSecondFactorEnrollment(handle: String, code: String, name: String?, timeout: Double)
        /// `mfa_remove`: withdraw the factor of this enrollment id.
        case removeSecondFactor(String, timeout: Double)

        /// The wire's verb for the action.
        public var verb: AccountAction {
            switch self {
            case .show: .show
            case .verifyEmail: .verifyEmail
            case .resetPassword: .resetPassword
            case .upgradeWithEmail, .upgradeWithIdentityProvider: .upgrade
            case .delete: .delete
            case .startSecondFactorEnrollment, .finishSecondFactorEnrollment: .mfaEnroll
            case .removeSecondFactor: .mfaRemove
            }
        }
    }

    public var account: String
    public var action: Action

    public init(account: String, action: Action) {
        self.account = account
        self.action = action
    }
}
