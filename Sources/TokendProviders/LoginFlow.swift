import TokendCore
import TokendProtocol

// The shape every interactive sign-in shares. A provider owns its flows and returns token sets
// as a stream of steps; the engine only sequences them, persists the result and serves it, and
// the request handler turns steps into the `login` op's progress lines (docs/protocol.md).

/// What a user asked for with `tokenctl login ACCOUNT …` (the `login` op).
public struct LoginRequest: Sendable {
    /// The wire's `LoginMethod` (TokendProtocol), named once for tokenctl and the daemon.
    public typealias Method = LoginMethod

    public var method: Method
    /// Firebase `email` sign-in, sign-up and upgrade.
    public var email: String?
    /// Firebase `email`: create the user (`accounts:signUp`) instead of signing in.
    public var create: Bool
    /// A password or custom token. It travels only from tokenctl's stdin to the provider: never
    /// logged, echoed, or put in an event or error message.
    public var secret: String?
    /// Scopes to ask for instead of the account's configured ones (OIDC).
    public var scopes: [String]?
    /// How long the user has to finish (browser and device flows).
    public var timeout: Double
    /// Firebase `idp`: the identity provider's id (`google.com`, `microsoft.com`, `github.com`,
    /// `oidc.NAME`) whose sign-in is exchanged at `signInWithIdp`.
    public var identityProvider: String? = nil
    /// Firebase `idp`: sign in at the identity provider with its device grant, not the browser.
    public var identityProviderDevice = false
    /// Firebase `idp`: the current user's ID token, to link the identity to that user (an
    /// anonymous upgrade keeps its uid) instead of signing in. Never logged.
    public var linkingIDToken: String? = nil
    /// Set when an OpenID Connect sign-in only proves who the user is to Firebase (`--idp`).
    public var federation: Federation? = nil
    /// Firebase `email`, `idp`: the second factor to answer when the user has several (its
    /// enrollment id).
    public var factor: String? = nil
    /// Firebase `second_factor`: the handle the first step's `second_factor` line gave; the
    /// code is `secret`.
    public var handle: String? = nil

    /// A sign-in at an identity provider on Firebase's behalf: the provider's own session is not
    /// kept (so no refresh token is needed), and the nonce the provider puts in its ID token is
    /// the SHA-256 (hex) of `rawNonce`, which Firebase checks when given the raw one.
    public struct Federation: Sendable {
        public var rawNonce: String

        public init(rawNonce: String) {
            self.rawNonce = rawNonce
        }
    }

    /// Five minutes: long enough to find a password manager, short enough that a forgotten
    /// login does not hold a loopback port open for long.
    public static let defaultTimeout: Double = SharedDefaults.loginTimeout

    /// A sign-in with nothing but its method: a provider's own inner flow, tests.
    public init(method: Method, timeout: Double = defaultTimeout) {
        self.method = method
        self.create = false
        self.timeout = timeout
    }

    /// The sign-in a `login` command asks for: `google` is method `idp` at google.com.
    public init(_ args: LoginArgs) {
        self.init(method: args.method, timeout: args.timeout)
        (email, create, secret, scopes, factor, handle) = (args.email, args.create, args.secret, args.scopes, args.factor, args.handle)
        if args.method == .google || args.method == .idp {
            method = .idp
            identityProvider = args.identityProvider
            identityProviderDevice = args.device
        }
    }
}

/// One step of a sign-in as the client sees it. Never a token, code, verifier or password.
public enum LoginStep: Sendable, Equatable {
    /// The user should open this URL in a browser (tokenctl opens it when there is a display).
    case openURL(String)
    /// The device grant: go to `verificationURI` and enter `userCode`.
    case userCode(verificationURI: String, verificationURIComplete: String?, userCode: String, expiresIn: Double?)
    /// Still waiting for the user; `message` says for what.
    case waiting(String)
    /// The user has a second factor: the flow ends `SECOND_FACTOR_REQUIRED`, and a `login` with
    /// method `second_factor`, this handle and the code finishes it.
    case secondFactor(SecondFactorChallenge)
    /// Signed in: the engine stores and serves these. The client only learns that it is done.
    case done(SignedIn)
}

/// What a sign-in stopped at a second factor tells the client: never the pending credential,
/// which stays in the daemon behind `handle`.
public struct SecondFactorChallenge: Sendable, Equatable {
    public var handle: String
    /// Every factor of the user, and the one to answer.
    public var factors: [SecondFactor]
    public var chosen: String

    public init(handle: String, factors: [SecondFactor], chosen: String) {
        self.handle = handle
        self.factors = factors
        self.chosen = chosen
    }
}

/// The session a successful sign-in produced.
public struct SignedIn: Sendable, Equatable {
    public var tokens: IssuedTokens
    /// The scopes the provider granted, when it said (OIDC); stored with the session.
    public var grantedScopes: [String]?
    /// How the user signed in (`password`, `anonymous`, `custom`, an identity provider's id
    /// such as `google.com`, `oidc`): for events.
    public var signInProvider: String?
    /// The scopes asked for (OIDC), so that a provider that narrowed them can be logged.
    public var requestedScopes: [String]?

    public init(tokens: IssuedTokens, grantedScopes: [String]? = nil, signInProvider: String? = nil, requestedScopes: [String]? = nil) {
        self.tokens = tokens
        self.grantedScopes = grantedScopes
        self.signInProvider = signInProvider
        self.requestedScopes = requestedScopes
    }

    /// Scopes asked for and not granted; empty when the provider did not say or granted all.
    public var narrowedScopes: [String] {
        guard let requestedScopes, let grantedScopes else { return [] }
        return requestedScopes.filter { !grantedScopes.contains($0) }
    }
}

/// Why a sign-in did not finish, in words safe to show: never a secret.
public struct LoginFailure: Error, Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        /// The provider or the user said no (wrong password, access denied, code expired): try
        /// again. tokenctl exits 77.
        case denied
        /// The account's configuration is wrong (client, API key, a method the project has
        /// disabled). Exit 78.
        case misconfigured
        /// The provider could not be reached or asked us to wait. Exit 75.
        case transient
        /// The request itself is wrong (a malformed email, a method this provider lacks). Exit 64.
        case badRequest
        /// The user did not finish in time. Exit 75.
        case timedOut
    }

    public var kind: Kind
    /// The provider's own code (`INVALID_LOGIN_CREDENTIALS`, `access_denied`, …) or ours.
    public var code: String
    /// What happened and what to do next.
    public var message: String
    /// Firebase answered the first factor with `mfaPendingCredential`: what continues the
    /// sign-in. A secret: never in a message, a log line or on the wire.
    var pendingSecondFactor: PendingSecondFactor? = nil
    /// The provider ended the session it was asked to change (Firebase's withdrawal of the
    /// newest second factor): the held session is dead and is to be forgotten, not kept.
    public var sessionEnded = false

    public init(_ kind: Kind, code: String, message: String) {
        self.kind = kind
        self.code = code
        self.message = message
    }
}

/// What revoking a refresh token at the provider (RFC 7009) came to.
public enum RevocationOutcome: Sendable, Equatable {
    case revoked
    /// The provider has no way to revoke from a client (Firebase): said honestly, not faked.
    case unsupported(String)
    case failed(RefreshFailure)
}
