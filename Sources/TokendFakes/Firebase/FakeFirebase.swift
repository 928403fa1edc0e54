import Foundation
import TokendCore
import TokendProviders
import TokendSystem

/// A Firebase Authentication look-alike on loopback, for tests and demos.
///
/// It follows the Auth emulator's convention (plain HTTP, the production host as the first path
/// segment) and the shapes in docs/architecture.md ("Provider facts") to the letter, then goes further than the emulator:
/// rotating refresh tokens, revocation, disabled and deleted users, and injected faults, so that
/// every branch of the refresh policy (docs/architecture.md, "Refresh policy") can be driven from a test.
///
/// It is a test double: it keeps every token it mints in memory and hands them out through
/// `requests` and the control plane. Never point anything real at it.
public final class FakeFirebase: Sendable {
    /// Knobs that take effect on the next request (see `update(_:)`).
    /// An identity provider as the project has it configured.
    public struct IdentityProvider: Sendable {
        /// Issuers whose ID tokens are taken as this provider's (Microsoft's `{tenantid}`
        /// template allowed); empty: any, like the emulator.
        public var issuers: Set<String>
        /// Client ids an ID token may be issued to (the configured client and its safelist);
        /// empty: any.
        public var clientIDs: Set<String>
        /// The provider's user API, for an access token that is neither JSON nor a JWT: what
        /// production asks (GitHub's `GET /user`) and the emulator cannot. Returns the
        /// provider's `sub`, `email`, `email_verified` claims, or nil for a token it refuses.
        public var userInfo: (@Sendable (String) -> [String: String]?)?

        public init(issuers: Set<String> = [], clientIDs: Set<String> = [], userInfo: (@Sendable (String) -> [String: String]?)? = nil) {
            self.issuers = issuers
            self.clientIDs = clientIDs
            self.userInfo = userInfo
        }
    }

    public struct Options: Sendable {
        /// Seconds an ID token lives. Production and the emulator say 3600; tests shorten it to
        /// watch proactive refreshes happen.
        public var lifetime: Int = 3600
        /// Hand out a new refresh token on every refresh. Off by default, like the emulator.
        public var rotate = false
        /// With `rotate`, the refresh token just replaced stops working (`INVALID_REFRESH_TOKEN`):
        /// a strictly rotating provider, where losing the newest token loses the session.
        public var revokePrevious = false
        /// With `rotate` and `revokePrevious`, presenting a replaced refresh token again also
        /// revokes every live refresh token of its user (the whole family answers
        /// `TOKEN_EXPIRED` from then on): refresh-token reuse detection as RFC 9700 §4.14.2 asks
        /// for it, and as Auth0, Okta and django-oauth-toolkit's `REFRESH_TOKEN_REUSE_PROTECTION`
        /// do. Firebase itself has none; the fleet tests need a provider that punishes reuse.
        public var revokeFamilyOnReuse = false
        /// Seconds every Firebase API answer is held back (control-plane answers are not).
        public var latency: Double = 0
        /// Goes into `iss` and `aud`; the emulator's projects are named `demo-…`.
        public var projectID = "demo-tokend"
        /// What the Secure Token API reports as `project_id`: the project's number, not its ID.
        public var projectNumber = "123456789012"
        /// API keys answered with `API_KEY_INVALID`; any other non-empty key is accepted.
        public var invalidAPIKeys: Set<String> = ["invalid-key"]
        /// API keys whose restrictions (Google Cloud console, Credentials) block the fake's
        /// requests: 403 `PERMISSION_DENIED` with the restriction's `ErrorInfo.reason`, on the
        /// Identity Toolkit and the Secure Token API alike.
        public var restrictedAPIKeys: [String: APIKeyRestriction] = [:]
        /// Providers whose tokens `signInWithIdp` takes only from the project's hosted handler
        /// (`/__/auth/handler`), never from a client that obtained them itself: Microsoft in
        /// production.
        public var clientCredentialsRefused: Set<String> = ["microsoft.com"]
        /// Answer as the Auth Emulator where it falls short of production: an opaque access
        /// token (GitHub's) is 501 "does not support … sign-in with credentials".
        public var answersAsAuthEmulator = false
        /// The fake's notion of now, for `iat`/`exp` and for fault windows. A `ManualClock` here
        /// lets a test expire a `forSeconds` fault without waiting for it.
        public var clock: any WallClock = SystemWallClock()
        /// Email-enumeration protection (on for new projects): an unknown email and a wrong
        /// password both answer `INVALID_LOGIN_CREDENTIALS`; off, `EMAIL_NOT_FOUND` and
        /// `INVALID_PASSWORD`.
        public var emailEnumerationProtection = true
        /// Sign-in methods switched off in the project (`password`, `anonymous`, `google.com`):
        /// they answer `OPERATION_NOT_ALLOWED`.
        public var disabledProviders: Set<String> = []
        /// The project lets only administrators create users: `signUp` answers `ADMIN_ONLY_OPERATION`.
        public var adminOnlySignUp = false
        /// The project lets only administrators delete users: `delete` answers `ADMIN_ONLY_OPERATION`.
        public var adminOnlyDelete = false
        /// After this many failed password sign-ins, every password sign-in answers
        /// `TOO_MANY_ATTEMPTS_TRY_LATER`. Nil: never.
        public var maximumFailedSignIns: Int?
        /// `delete` needs a sign-in at most this many seconds old, else
        /// `CREDENTIAL_TOO_OLD_LOGIN_AGAIN` (production: 300). Nil: no limit.
        public var recentSignInWindow: Double?
        /// TOTP second factors enabled for the project (Admin SDK `multiFactorConfig`
        /// `providerConfigs` with a TOTP config `ENABLED`). Off, as in every new project:
        /// `mfaEnrollment:start` answers `OPERATION_NOT_ALLOWED : TOTP based MFA not enabled.`
        public var totpEnabled = false
        /// `totpProviderConfig.adjacentIntervals`: codes of this many 30 s steps either side of
        /// now are accepted too (Identity Platform: 0 to 10, default 5).
        public var totpAdjacentIntervals = 5
        /// `mfaEnrollment:start` needs a sign-in at most this many seconds old, else
        /// `CREDENTIAL_TOO_OLD_LOGIN_AGAIN` (a recording of production: 293 s accepted, 303 s
        /// refused). Nil: no limit.
        public var enrollmentRecentSignInWindow: Double? = 300
        /// How long an `mfaPendingCredential` is good for (production: 5 minutes; a recording
        /// has TOTP_CHALLENGE_TIMEOUT at 302 s). Negative: already expired when issued.
        public var pendingCredentialLifetime: Double = 300
        /// Extra seconds an Identity Toolkit answer about this email (sign-in, sign-up) is held
        /// back: one slow sign-in among fast ones, for race tests.
        public var signInLatency: [String: Double] = [:]
        /// The identity providers the project enables (Authentication, Sign-in method), by
        /// provider id: `signInWithIdp` refuses any other with `OPERATION_NOT_ALLOWED`.
        public var identityProviders: [String: IdentityProvider] = ["google.com": IdentityProvider(issuers: ["https://accounts.google.com", "accounts.google.com"])]
        /// One account per email address (the console's default, the emulator's
        /// `allowDuplicateEmails: false`): a federated sign-in with an address another user has
        /// takes that user over when the provider verified it, else answers `needConfirmation`.
        public var oneAccountPerEmail = true
        /// A password policy in force (production only; the emulator knows only `WEAK_PASSWORD`
        /// below 6 characters): sign-ups and upgrades that miss a requirement answer
        /// `PASSWORD_DOES_NOT_MEET_REQUIREMENTS`.
        public var passwordPolicy: PasswordPolicy?
        /// Sign-in methods (`password`, `anonymous`) whose reCAPTCHA Enterprise enforcement is
        /// ENFORCE (production only): a call without a reCAPTCHA token answers `MISSING_RECAPTCHA_TOKEN`.
        public var recaptchaEnforced: Set<String> = []
        /// Errors only production sends and the fake does not model (quotas, App Check),
        /// answered by every call of the Identity Toolkit method named by the key (`sendOobCode`).
        public var productionRefusals: [String: Refusal] = [:]

        public init() {}
    }

    /// A project's password policy, as the console sets it (Authentication, Settings, Password policy).
    public struct PasswordPolicy: Sendable, Equatable {
        public var minimumLength: Int
        public var requireUppercase: Bool
        public var requireNumeric: Bool

        public init(minimumLength: Int = 6, requireUppercase: Bool = false, requireNumeric: Bool = false) {
            self.minimumLength = minimumLength
            self.requireUppercase = requireUppercase
            self.requireNumeric = requireNumeric
        }

        /// Production's wording, one entry per missing requirement (seen in apps' logs:
        /// `Missing password requirements: [Password must contain an upper case character, …]`).
        func missing(in password: String) -> [String] {
            var missing: [String] = []
            if password.count < minimumLength { missing.append("Password must contain at least \(minimumLength) characters") }
            if requireUppercase, !password.contains(where: \.isUppercase) { missing.append("Password must contain an upper case character") }
            if requireNumeric, !password.contains(where: \.isNumber) { missing.append("Password must contain a numeric character") }
            return missing
        }
    }

    /// An error answer: Google's envelope with `message`, or (`appCheck`) the 401 a project
    /// enforcing App Check gives a caller without a token.
    public struct Refusal: Sendable, Equatable {
        public var message: String
        public var status: Int

        public init(message: String, status: Int = 400) {
            self.message = message
            self.status = status
        }

        /// What apps report from a project enforcing App Check on Authentication without an App
        /// Check token (production only; wording from apps' reports, not a Google document).
        public static let appCheck = Refusal(message: "Firebase App Check token is invalid.", status: 401)
    }

    /// A signed-in user as a test sees it: what a login would have handed the daemon.
    public struct Session: Sendable, Equatable {
        public var uid: String
        public var refreshToken: String
        public var idToken: String
        public var expiresAt: Date

        public init(uid: String, refreshToken: String, idToken: String, expiresAt: Date) {
            self.uid = uid
            self.refreshToken = refreshToken
            self.idToken = idToken
            self.expiresAt = expiresAt
        }
    }

    /// Port the listener is bound to (the real one when started with port 0).
    public let port: Int
    /// The interface it listens on, as given to `start`.
    public let host: String
    let backend: Backend
    /// Nil for a fake served in-process (`inProcess`), through the transport seam only.
    private let server: FakeHTTPServer?

    private init(host: String, port: Int, backend: Backend, server: FakeHTTPServer?) {
        self.host = host
        self.port = port
        self.backend = backend
        self.server = server
    }

    /// How a fake is reached: over a loopback socket, or in-process through the providers' HTTP
    /// transport seam (no socket; `transport()` is then the only way in).
    public enum Serving: Sendable, CaseIterable { case loopback, inProcess }

    /// Starts listening. Port 0 asks the kernel for a free port, so parallel tests never collide.
    /// In-process, nothing listens and `emulatorHost` names the Auth emulator's usual port, 9099.
    public static func start(
        serving: Serving = .loopback, host: String = "127.0.0.1", port: Int = 0, options: Options = .init()
    ) async throws -> FakeFirebase {
        let backend = Backend(options: options)
        guard serving == .loopback else { return FakeFirebase(host: host, port: 9099, backend: backend, server: nil) }
        let server = try await FakeHTTPServer.start(host: host, port: port, routes: backend)
        return FakeFirebase(host: host, port: server.port, backend: backend, server: server)
    }

    /// The providers' HTTP transport to this fake, as it is served: over loopback, or straight
    /// into it in-process (faults played as the client would meet them on a socket).
    public func transport(deadline: Double = HTTPTransport.defaultDeadline, clock: any WallClock = SystemWallClock()) -> HTTPTransport {
        guard server == nil else { return HTTPTransport(environment: [:], deadline: deadline, clock: clock) }
        return FakeResponder(routes: backend).transport(deadline: deadline, clock: clock)
    }

    /// Faults on any route of this fake, and its scripted answerer (`FaultLayer`).
    public var faults: FaultLayer { backend.faults }

    /// `host:port`, what `FIREBASE_AUTH_EMULATOR_HOST` and the config's `emulator` key take
    /// (no scheme). IPv6 literals get brackets so the value still splits at the last colon.
    /// Where a project's hosted handler answers (`https://AUTH_DOMAIN/__/auth/handler`): the
    /// `requestUri` its own `signInWithIdp` calls carry.
    public static let hostedHandlerPath = "/__/auth/handler"

    public var emulatorHost: String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    /// Stops listening and closes every connection; pending `waitForRequests` calls answer false.
    public func shutdown() async throws {
        backend.cancelWaiters()
        try await server?.shutdown()
    }

    /// `accounts:signInWithIdp` called in-process, as Firebase's hosted handler calls it after
    /// the provider answered (`FirebaseHostedStandIn`): the status and body of the answer.
    public func signInWithIdp(apiKey: String, requestUri: String, postBody: String) -> (status: Int, body: [UInt8]) {
        struct Body: Encodable {
            var requestUri: String
            var postBody: String
            var returnSecureToken = true
            var returnIdpCredential = true
        }
        let request = IncomingRequest(
            method: "POST", target: "/identitytoolkit.googleapis.com/v1/accounts:signInWithIdp",
            headers: ["x-goog-api-key": apiKey, "content-type": "application/json"],
            body: Array(FakeJSON.encode(Body(requestUri: requestUri, postBody: postBody))))
        guard case .reply(let reply) = backend.handle(request).action else { return (503, []) }
        return (reply.status, reply.body)
    }

    // MARK: - Users

    /// Creates a user and signs it in: a password user when `email` is given, else an anonymous
    /// one. An email already taken signs that user in again instead (a new session, same uid).
    public func createUser(email: String? = nil, password: String? = nil) -> Session {
        // Only a duplicate email without reuse answers nil, and reuse is on here.
        backend.createUser(email: email, password: password, reuseExisting: true)!.session
    }

    /// Every refresh of the user's tokens now answers `USER_DISABLED`.
    public func disableUser(_ uid: String) { _ = backend.disableUser(uid) }

    /// Every refresh of the user's tokens now answers `USER_NOT_FOUND`.
    public func deleteUser(_ uid: String) { _ = backend.deleteUser(uid) }

    /// Every refresh token issued to the user so far now answers `TOKEN_EXPIRED` (what
    /// `revokeRefreshTokens` in the Admin SDK does); a new sign-in works again.
    public func revokeTokens(_ uid: String) { _ = backend.revokeTokens(uid) }

    /// The most recent refresh token issued to the user, by sign-in or rotation.
    public func newestRefreshToken(uid: String) -> String? {
        backend.newestRefreshToken(uid: uid)
    }

    // MARK: - Behaviour

    /// Changes options; the next request sees the change.
    public func update(_ change: (inout Options) -> Void) {
        backend.update(change)
    }

    /// The current options.
    public var options: Options { backend.options }

    // MARK: - Observing

    /// Every Firebase API request seen, in the order they were answered (or refused, dropped,
    /// left hanging). Control-plane requests are not listed. Holds live tokens: a test double.
    public var requests: [Request] { backend.requests }

    /// Calls `handler` with each Firebase API request as it is logged, on the fake's event-loop
    /// thread: keep it quick. For the executable's log line; tests should prefer `waitForRequests`.
    public func onRequest(_ handler: @escaping @Sendable (Request) -> Void) {
        backend.addObserver(handler)
    }

    /// Waits until at least `count` requests have been logged; false when `timeout` seconds pass
    /// first or the fake shuts down. Woken by the log itself, not by polling.
    public func waitForRequests(count: Int, timeout: Double) async -> Bool {
        await backend.waitForRequests(count: count, timeout: timeout)
    }
}

/// Why the fake could not start.
public enum FakeFirebaseError: Error, Equatable, CustomStringConvertible {
    /// The listener came up without a local address, so its port is unknown.
    case noLocalAddress(host: String)

    public var description: String {
        switch self {
        case .noLocalAddress(let host): "the fake's listener on \(host) has no local address"
        }
    }
}
