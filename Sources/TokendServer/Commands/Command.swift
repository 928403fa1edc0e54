// Commands/ — the protocol's ops as types: a request line decoded and checked into a `Command`
// (every field rule in Command+Decoding.swift), and the service protocols handlers call, which
// the engine implements.

import TokendCore
import TokendProtocol
import TokendProviders

/// A request line, decoded and checked: what an op's handler receives. Built only by
/// `Command.init(_:)` (Command+Decoding.swift), so every field rule lives in one place and a
/// handler never sees a missing, ill-typed or out-of-range field.
public enum Command: Sendable {
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
        }
    }
}

extension Command: CustomStringConvertible {
    /// `import` carries tokens and `login` passwords: describe a command by its op alone.
    public var description: String { "Command(\(op.rawValue))" }
}

/// `token`: a bearer token for `account` that stays valid for `minValid` seconds.
public struct TokenArgs: Sendable, Equatable {
    public var account: String
    public var minValid: Double
    /// Nil: the account's default kind.
    public var kind: TokenKind?
    public var timeout: Double
    /// The narrower scopes and/or audience asked for (`scope`, `audience`); nil: the account's
    /// own token.
    public var scope: TokenScope?

    public init(account: String, minValid: Double, kind: TokenKind? = nil, timeout: Double, scope: TokenScope? = nil) {
        self.account = account
        self.minValid = minValid
        self.kind = kind
        self.timeout = timeout
        self.scope = scope
    }
}

/// `list`, `status`: one account, or all when nil.
public struct StatusArgs: Sendable, Equatable {
    public var account: String?
}

public struct RefreshArgs: Sendable, Equatable {
    public var account: String
    public var timeout: Double
}

/// `import`: the session to store, already checked (a refresh token; tokens with a known expiry).
public struct ImportArgs: Sendable, Equatable {
    public var account: String
    public var tokens: TokenSet
    public var timeout: Double
}

public struct LoginArgs: Sendable {
    public var account: String
    public var request: LoginRequest
}

public struct LogoutArgs: Sendable, Equatable {
    public var account: String
}

public struct WatchArgs: Sendable, Equatable {
    /// One account's events, or every account's when nil.
    public var account: String?
    /// Include profile fields (email) in events.
    public var profile: Bool
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
        /// `mfa_enroll` with the handle and the code.
        case finishSecondFactorEnrollment(handle: String, code: String, timeout: Double)
        /// `mfa_remove`: withdraw the factor of this enrollment id.
        case removeSecondFactor(String, timeout: Double)
    }

    public var account: String
    public var action: Action
}
