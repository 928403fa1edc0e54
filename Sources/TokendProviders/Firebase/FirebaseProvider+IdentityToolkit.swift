import TokendCore
import TokendProtocol

/// Calls to the Identity Toolkit API (v1 `accounts:METHOD`, v2 `accounts/mfa…` for second
/// factors): sign-in, sign-up and account management. Every answer is read here, and every error becomes a `LoginFailure` whose
/// message says what happened and what to do next (README.md, "Firebase").
extension FirebaseProvider {
    public static let identityToolkitHost = "identitytoolkit.googleapis.com"

    /// What the sign-in methods answer on success (production's camelCase names).
    struct SignInAnswer: Decodable {
        var idToken: String?
        var refreshToken: String?
        /// A string in production ("3600"); a number is accepted too.
        var expiresIn: FlexibleNumber?
        var localId: String?
        var email: String?
        /// The user has a second factor: no tokens, only this credential to continue with.
        var mfaPendingCredential: String?
        /// With `mfaPendingCredential`: the user's factors.
        var mfaInfo: [MFAEnrollmentInfo]?
        /// `signInWithIdp` may answer 200 with an error here instead of an HTTP error.
        var errorMessage: String?
        /// `signInWithIdp` in a project with one account per email: another user already has
        /// this address (firebase-js-sdk `_processCredentialSavingMfaContextIfNecessary` →
        /// `account-exists-with-different-credential`). Tokens, if any, must not be used.
        var needConfirmation: Bool?
        /// With `needConfirmation`: the providers the address's owner signs in with, password and
        /// phone left out (emulator `handleIdpSigninEmailRequired`); none means its password.
        var verifiedProvider: [String]?
        var isNewUser: Bool?
    }

    /// POSTs `body` as JSON to the call's path and returns the 200 answer's bytes. `secrets`
    /// (password, tokens) are scrubbed from any message that might echo them.
    func identityToolkit(_ call: FirebaseCall, _ body: some Encodable, secrets: [String]) async -> Result<[UInt8], LoginFailure> {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        guard let bytes = try? encoder.encode(InTenant(body: body, tenantId: tenantID)) else {
            return .failure(LoginFailure(.badRequest, code: "bad_request", message: "the request could not be encoded"))
        }
        let url = endpoint(host: Self.identityToolkitHost, path: call.path)
        switch await transport.send(.json(url, Array(bytes))) {
        case .failure(let failure):
            return .failure(LoginFailure(.transient, code: failure.refreshFailure.code, message: "\(failure.message); check the network and try again"))
        case .success(let answer) where answer.status == 200:
            return .success(answer.body)
        case .success(let answer):
            return .failure(Self.signInFailure(status: answer.status, body: answer.body, secrets: secrets, call: call))
        }
    }

    /// A request body with the account's tenant added (Identity Platform multi-tenancy: every
    /// Identity Toolkit call names it; firebase-js-sdk `_addTidIfNecessary`).
    struct InTenant<Body: Encodable>: Encodable {
        var body: Body
        var tenantId: String?

        enum Key: String, CodingKey { case tenantId }

        func encode(to encoder: any Encoder) throws {
            try body.encode(to: encoder)
            var container = encoder.container(keyedBy: Key.self)
            try container.encodeIfPresent(tenantId, forKey: .tenantId)
        }
    }

    /// Nil when the ID token belongs to the account's tenant (or both to none); else why not.
    func tenantProblem(idToken: String?) -> RefreshFailure? {
        let held = idToken.flatMap { FirebaseClaims(token: $0)?.tenant }
        guard held != tenantID else { return nil }
        return RefreshFailure(
            code: "TENANT_MISMATCH",
            message: "the session belongs to \(held.map { "tenant \($0)" } ?? "no tenant (the project's own users)"), but the account's tenant_id is \(tenantID ?? "unset"); sign in again, or fix tenant_id")
    }

    /// Reads a sign-in answer: tokens, or the failure it carries (`errorMessage`,
    /// `needConfirmation`, MFA).
    static func signedIn(_ body: [UInt8], provider: String, call: FirebaseCall, secrets: [String] = []) -> Result<SignedIn, LoginFailure> {
        guard let answer = try? JSONDecoder().decode(SignInAnswer.self, from: Data(body)) else {
            return .failure(LoginFailure(.transient, code: "malformed_response", message: "Firebase answered 200 with a body that is not a sign-in answer; try again"))
        }
        if let errorMessage = answer.errorMessage, !errorMessage.isEmpty {
            return .failure(failure(code: code(of: errorMessage), detail: errorMessage, call: call).redacting(secrets))
        }
        if answer.needConfirmation == true {
            return .failure(needConfirmation(email: answer.email ?? "", verifiedProviders: answer.verifiedProvider ?? [], call: call).redacting(secrets))
        }
        if let credential = answer.mfaPendingCredential {
            var failure = failure(code: "MFA_REQUIRED", detail: "", call: call)
            let factors = (answer.mfaInfo ?? []).compactMap(\.factor)
            // Read on by `login`, which asks for the code; no factor listed stays a refusal.
            if !factors.isEmpty { failure.pendingSecondFactor = PendingSecondFactor(credential: credential, factors: factors, provider: provider) }
            return .failure(failure.redacting(secrets + [credential]))
        }
        guard let idToken = answer.idToken, let refreshToken = answer.refreshToken else {
            return .failure(LoginFailure(.transient, code: "malformed_response", message: "Firebase answered 200 without tokens; try again"))
        }
        let lifetime = answer.expiresIn?.seconds.flatMap { $0 > 0 && $0 <= RefreshClassifier.maximumLifetime ? $0 : nil }
        let tokens = IssuedTokens(refreshToken: refreshToken, idToken: idToken, accessToken: idToken, expiresIn: lifetime)
        let claimed = FirebaseClaims(token: idToken)?.signInProvider
        return .success(SignedIn(tokens: tokens, signInProvider: claimed ?? provider))
    }

    /// An HTTP error answer as a sign-in failure. The refresh classifier reads Google's error
    /// envelope (and knows which statuses are transient); the code and the call pick the hint.
    static func signInFailure(status: Int, body: [UInt8], secrets: [String], call: FirebaseCall) -> LoginFailure {
        let failure: LoginFailure
        switch RefreshClassifier.firebase(status: status, body: body, retryAfter: nil) {
        case .misconfigured(let refresh) where refresh.code == "API_KEY_INVALID":
            failure = LoginFailure(.misconfigured, code: refresh.code, message: "Firebase rejects the account's api_key; copy the Web API key from the project settings into config.toml")
        case .misconfigured(let refresh) where refresh.isAPIKeyRefusal:
            failure = LoginFailure(.misconfigured, code: refresh.code, message: refresh.message)
        case .misconfigured(let refresh) where refresh.message.lowercased().contains("app check"):
            failure = Self.failure(code: "APP_CHECK", detail: refresh.message, call: call)
        case .transient(let refresh, _) where status == 501 && refresh.message.contains("Auth Emulator"):
            // The emulator's NotImplementedError: no later try can succeed there.
            failure = LoginFailure(
                .misconfigured, code: "EMULATOR_UNSUPPORTED",
                message: "the Firebase Auth Emulator cannot do this (\(refresh.message)); run this sign-in against a real Firebase project")
        case .transient(let refresh, _) where RefreshClassifier.firebaseTransient.contains(refresh.code):
            failure = Self.failure(code: refresh.code, detail: refresh.message, call: call)
        case .transient(let refresh, _):
            failure = LoginFailure(.transient, code: refresh.code, message: "Firebase is busy or failing (\(refresh.message)); try again later")
        case .misconfigured(let refresh), .needsLogin(let refresh):
            failure = Self.failure(code: refresh.code, detail: refresh.message, call: call)
        case .refreshed:
            failure = LoginFailure(.transient, code: "http_\(status)", message: "Firebase answered HTTP \(status); try again")
        }
        return failure.redacting(secrets)
    }

    /// `CODE : detail` → `CODE`.
    static func code(of message: String) -> String {
        message.split(separator: ":", maxSplits: 1).first.map(\.trimmed) ?? message
    }

    /// Every Identity Toolkit code a user can meet, with what it means for `call` and what to do
    /// (the table in README.md, "When it fails"). The server's reason text, the part after
    /// `CODE :`, is kept in parentheses; `secrets` are redacted by the caller.
    static func failure(code: String, detail: String, call: FirebaseCall) -> LoginFailure {
        let reason = detail.split(separator: ":", maxSplits: 1).dropFirst().first.map(\.trimmed) ?? ""
        let said = reason.isEmpty ? "" : " (\(reason))"
        func make(_ kind: LoginFailure.Kind, _ message: String) -> LoginFailure {
            LoginFailure(kind, code: code, message: message)
        }
        switch code {
        case "INVALID_LOGIN_CREDENTIALS":
            return make(.denied, "the email or password is wrong, or no such user exists; check both, or add --create to sign up")
        case "EMAIL_NOT_FOUND" where call == .passwordReset:
            return make(.badRequest, "no user of the project has this email; check the address")
        case "EMAIL_NOT_FOUND":
            return make(.denied, "no user has this email; check it, or add --create to sign up")
        case "INVALID_PASSWORD":
            return make(.denied, "the password is wrong; try again, or: tokenctl account reset-password ACCOUNT --email ADDRESS")
        case "USER_DISABLED":
            return make(.denied, "the user is disabled in the Firebase project; ask the project's administrator")
        case "USER_NOT_FOUND":
            return make(.denied, "the user no longer exists; sign in again or create a new one")
        case "EMAIL_EXISTS" where call == .passwordLink:
            return make(.badRequest, "another user of the project already has this email; upgrade with another address, or sign that user in instead: tokenctl login ACCOUNT --email ADDRESS")
        case "EMAIL_EXISTS" where call.identityProvider != nil:
            let id = call.identityProvider ?? ""
            return make(.denied, "another user of the project already has the email of this \(IdentityProvider.displayName(id)) account; sign that user in instead (tokenctl login ACCOUNT \(IdentityProvider.flag(id))), or link another \(IdentityProvider.displayName(id)) account")
        case "EMAIL_EXISTS":
            return make(.badRequest, "a user with this email already exists; sign in without --create")
        case "WEAK_PASSWORD":
            return make(.badRequest, "Firebase refuses the password as too weak\(said); choose a longer one")
        case "PASSWORD_DOES_NOT_MEET_REQUIREMENTS":
            return make(.badRequest, "the project's password policy refuses this password\(said); choose one that meets it")
        case "INVALID_EMAIL", "MISSING_EMAIL":
            return make(.badRequest, "the email address is not valid; check it")
        case "MISSING_PASSWORD":
            return make(.badRequest, "no password was given; type it at the prompt or pipe it on stdin")
        case "OPERATION_NOT_ALLOWED" where call == .secondFactorEnrollStart:
            // TOTP is off in every project until an administrator enables it, and only through
            // the Admin SDK or the REST API (Firebase "TOTP MFA" guide; Identity Platform
            // "Enable TOTP MFA"): the console has no switch for it.
            return make(.misconfigured, "TOTP second factors are not enabled for the project\(said); an administrator enables them with the Admin SDK (updateProjectConfig with multiFactorConfig.providerConfigs [{state: \"ENABLED\", totpProviderConfig: {adjacentIntervals: 5}}]) or with PATCH https://identitytoolkit.googleapis.com/admin/v2/projects/PROJECT/config?updateMask=mfa (the Firebase console has no switch for it)")
        case "OPERATION_NOT_ALLOWED", "PASSWORD_LOGIN_DISABLED":
            let method = code == "PASSWORD_LOGIN_DISABLED" ? "Email/Password" : call.consoleSignInMethod
            return make(.misconfigured, "\(method) sign-in is disabled for the project\(said); enable \(method) in the Firebase console (Authentication, Sign-in method)")
        case "ADMIN_ONLY_OPERATION":
            return make(.misconfigured, call.adminOnlyAdvice)
        case "TOO_MANY_ATTEMPTS_TRY_LATER":
            return make(.transient, "Firebase blocks requests from this user or device for a while after too many attempts\(said); try again later")
        case "QUOTA_EXCEEDED":
            return make(.transient, "the project has used up a Firebase quota\(said); its owner can raise it")
        case "RESET_PASSWORD_EXCEED_LIMIT":
            return make(.transient, "too many password-reset emails were asked for this address\(said); try again later")
        case "CREDENTIAL_TOO_OLD_LOGIN_AGAIN" where call == .secondFactorEnrollStart:
            // A recorded production answer: a sign-in 303 s old or more is refused (t-k/fireemu).
            return make(.denied, "Firebase enrolls a second factor only within about 5 minutes of a sign-in, and refreshes do not count; sign in again (tokenctl login ACCOUNT …), then enroll at once: tokenctl account mfa enroll ACCOUNT --totp")
        case "CREDENTIAL_TOO_OLD_LOGIN_AGAIN":
            return make(.denied, "Firebase wants a recent sign-in before this change")
        case "INVALID_ID_TOKEN", "TOKEN_EXPIRED", "INVALID_REFRESH_TOKEN":
            return make(.denied, "Firebase no longer accepts the session\(said)")
        case "INVALID_IDP_RESPONSE" where call.identityProvider == "google.com" && (reason.lowercased().contains("audience") || reason.lowercased().contains("client")):
            return make(.misconfigured, "the project does not accept Google ID tokens issued to the account's Google client_id\(said); use the project's own Google OAuth client, or add this one under Authentication, Sign-in method, Google, \"Safelist client IDs from external projects\"")
        case "INVALID_IDP_RESPONSE" where reason.lowercased().contains("audience") || reason.lowercased().contains("client"):
            let name = IdentityProvider.displayName(call.identityProvider ?? "")
            return make(.misconfigured, "the project does not accept \(name) tokens issued to the account's client_id\(said); use the client configured for \(name) in the Firebase console (Authentication, Sign-in method)")
        case "INVALID_CREDENTIAL_OR_PROVIDER_ID":
            // Production's reason echoes the credential (`http://localhost?id_token=…`): left out.
            let id = call.identityProvider ?? ""
            let name = IdentityProvider.displayName(id)
            return make(.misconfigured, "Firebase refuses a \(name) credential that tokend obtained itself; sign in through the project's Firebase-hosted handler instead: auth_domain = \"PROJECT.firebaseapp.com\" in [account.NAME.idp.\"\(id)\"] in place of its client (README.md, \"Microsoft\")")
        case "MISSING_OR_INVALID_NONCE":
            return make(.denied, "Firebase refused the sign-in's nonce\(said): each credential is taken once, with the nonce it was issued for; sign in again")
        case "INVALID_IDP_RESPONSE":
            return make(.denied, "Firebase did not accept the identity provider's answer\(said); sign in again")
        case "NEED_CONFIRMATION":
            return needConfirmation(email: detail, verifiedProviders: [], call: call)
        case "FEDERATED_USER_ID_ALREADY_LINKED":
            let id = call.identityProvider ?? ""
            return make(.denied, "this \(IdentityProvider.displayName(id)) account already belongs to another user of the project; sign in with it (tokenctl login ACCOUNT \(IdentityProvider.flag(id))) instead of upgrading")
        case "INVALID_CUSTOM_TOKEN", "MISSING_CUSTOM_TOKEN":
            return make(.denied, "Firebase does not accept the custom token\(said.isEmpty ? " (malformed, expired or for another project)" : said); mint a new one")
        case "TENANT_ID_MISMATCH" where call == .customToken:
            return make(.misconfigured, "the custom token was minted for another tenant than the account's tenant_id (or for the project's own users); mint it for the account's tenant with the Admin SDK: auth.tenantManager().authForTenant(TENANT_ID).createCustomToken(uid)")
        case "CREDENTIAL_MISMATCH":
            return make(.misconfigured, "the custom token was minted for another Firebase project than the account's api_key; check both")
        case "MFA_REQUIRED":
            return make(.misconfigured, "this user has a second factor (multi-factor authentication) that Firebase did not describe; use a user without one, or a custom token")
        case "INVALID_CODE" where call == .secondFactorEnrollFinish:
            return make(.badRequest, "the code is wrong or expired\(said), and the enrollment is spent; start it again: tokenctl account mfa enroll ACCOUNT --totp")
        case "INVALID_CODE", "INVALID_VERIFICATION_CODE":
            return make(.denied, "the second factor's code is wrong or expired\(said); nothing was stored, sign in again with a fresh code")
        // The last two are production's answers for TOTP as a recording has them (t-k/fireemu):
        // a pending credential older than 5 minutes, and one Firebase does not know.
        case "INVALID_MFA_PENDING_CREDENTIAL", "MISSING_MFA_PENDING_CREDENTIAL", "TOTP_CHALLENGE_TIMEOUT", "INVALID_PENDING_TOKEN":
            return make(.denied, "the sign-in waited too long for its second factor\(said); sign in again")
        case "UNVERIFIED_EMAIL":
            return make(.badRequest, "Firebase enrolls a second factor only for a verified email address; verify it first: tokenctl account verify-email ACCOUNT")
        case "MFA_ENROLLMENT_NOT_FOUND":
            return make(.badRequest, "the user has no second factor with this id\(said); list them: tokenctl account mfa list ACCOUNT")
        case "SECOND_FACTOR_EXISTS":
            return make(.badRequest, "the user already has this second factor")
        case "SECOND_FACTOR_LIMIT_EXCEEDED":
            return make(.badRequest, "the user has as many second factors as Firebase allows (one TOTP factor, five in all); remove one first: tokenctl account mfa remove ACCOUNT ID (the ids: tokenctl account mfa list ACCOUNT)")
        case "UNSUPPORTED_FIRST_FACTOR":
            return make(.badRequest, "Firebase does not allow a second factor for a session signed in this way (anonymous, custom token or phone); sign in with the user's email and password or an identity provider, then enroll: tokenctl account mfa enroll ACCOUNT --totp")
        case "PROJECT_DISABLED":
            return make(.misconfigured, "Authentication is disabled for the project; ask the project's administrator")
        case "PROJECT_NOT_FOUND", "CONFIGURATION_NOT_FOUND":
            return make(.misconfigured, "Firebase has no such project or Authentication is not set up for it; check the account's api_key")
        case _ where code.contains("RECAPTCHA") || code == "MISSING_CLIENT_TYPE":
            return make(.misconfigured, "the project requires reCAPTCHA Enterprise for \(call.consoleSignInMethod) sign-in, which only a web or mobile app can supply and tokend cannot; set its enforcement to audit or off (Authentication, Settings, reCAPTCHA), or sign in with --custom-token")
        case "APP_CHECK":
            return make(.misconfigured, "the project enforces App Check for Authentication, which only a registered app can pass and tokend cannot (\(detail)); turn enforcement off for Authentication (App Check, APIs), or sign in with --custom-token")
        default:
            let text = detail.isEmpty ? code : detail
            return LoginFailure(.misconfigured, code: code.isEmpty ? "unknown" : code, message: "Firebase refused the request (\(text)); check the account's configuration")
        }
    }
}

extension FirebaseProvider {
    /// One account per email, and the address's owner signs in another way: named from the
    /// answer's `verifiedProvider` (`--google`, `--idp github.com`); only an owner that lists no
    /// provider signs in with its password (`--email`).
    static func needConfirmation(email: String, verifiedProviders: [String], call: FirebaseCall) -> LoginFailure {
        let address = email.isEmpty ? "this email" : email
        // Provider ids only (the answer is outside data), and few: a user links a handful.
        let usable = verifiedProviders.filter { IdentityProviderID.problem(with: $0) == nil }.prefix(3)
        let ways = usable.isEmpty ? "--email \(address)" : usable.map(IdentityProvider.flag).joined(separator: " or ")
        return LoginFailure(
            .denied, code: "NEED_CONFIRMATION",
            message: "the project allows one account per email address, and \(address) already has an account that signs in another way; sign in that way (tokenctl login ACCOUNT \(ways)) instead of with \(IdentityProvider.displayName(call.identityProvider ?? ""))")
    }
}

/// The Identity Toolkit call a failure answers: one code can call for different next steps
/// (`EMAIL_EXISTS` on a sign-up or an upgrade, `OPERATION_NOT_ALLOWED` for each sign-in method).
public enum FirebaseCall: Sendable, Equatable {
    case passwordSignIn, passwordSignUp, anonymousSignUp, customToken
    /// A sign-in with the identity provider of this id (`accounts:signInWithIdp`).
    case idpSignIn(String)
    /// An anonymous user given an email and password (`accounts:signUp` with `idToken`).
    case passwordLink
    /// An anonymous user linked to the identity provider of this id (`signInWithIdp` with `idToken`).
    case idpLink(String)
    case passwordReset, verifyEmail, lookup, delete
    /// `v2/accounts/mfaSignIn:finalize`, `mfaEnrollment:start`, `:finalize`, `:withdraw`.
    case secondFactorSignIn, secondFactorEnrollStart, secondFactorEnrollFinish, secondFactorWithdraw

    /// The identity provider's id of a federated sign-in or link.
    var identityProvider: String? {
        switch self {
        case .idpSignIn(let id), .idpLink(let id): id
        default: nil
        }
    }

    /// `accounts:METHOD`.
    var method: String {
        switch self {
        case .passwordSignIn: "signInWithPassword"
        case .passwordSignUp, .anonymousSignUp, .passwordLink: "signUp"
        case .customToken: "signInWithCustomToken"
        case .idpSignIn, .idpLink: "signInWithIdp"
        case .passwordReset, .verifyEmail: "sendOobCode"
        case .lookup: "lookup"
        case .delete: "delete"
        case .secondFactorSignIn: "mfaSignIn:finalize"
        case .secondFactorEnrollStart: "mfaEnrollment:start"
        case .secondFactorEnrollFinish: "mfaEnrollment:finalize"
        case .secondFactorWithdraw: "mfaEnrollment:withdraw"
        }
    }

    /// The path under the Identity Toolkit host: second factors are API v2's.
    var path: String {
        switch self {
        case .secondFactorSignIn, .secondFactorEnrollStart, .secondFactorEnrollFinish, .secondFactorWithdraw: "/v2/accounts/\(method)"
        default: "/v1/accounts:\(method)"
        }
    }

    /// The switch's name in the console (Authentication, Sign-in method).
    var consoleSignInMethod: String {
        switch self {
        case .anonymousSignUp: "Anonymous"
        case .idpSignIn(let id), .idpLink(let id): IdentityProvider.displayName(id)
        case .customToken: "custom-token"
        default: "Email/Password"
        }
    }

    /// `ADMIN_ONLY_OPERATION`: the console's user actions (Authentication, Settings, User
    /// actions) or the Anonymous provider let only administrators do this.
    var adminOnlyAdvice: String {
        switch self {
        case .anonymousSignUp:
            "the project lets only administrators create users: enable Anonymous (Authentication, Sign-in method) and \"Enable create (sign-up)\" (Authentication, Settings, User actions)"
        case .passwordSignUp, .passwordLink, .idpSignIn:
            "the project lets only administrators create users: enable \"Enable create (sign-up)\" (Authentication, Settings, User actions), or have an administrator create the user"
        case .delete:
            "the project lets only administrators delete users: enable \"Enable deletion\" (Authentication, Settings, User actions), or ask an administrator"
        default:
            "the project lets only administrators do this; ask the project's administrator"
        }
    }
}

extension LoginFailure {
    /// Should a provider ever echo a password or token in an error, it stops here.
    func redacting(_ secrets: [String]) -> LoginFailure {
        var copy = self
        for secret in secrets where !secret.isEmpty {
            copy.message = copy.message.replacing(secret, with: "[redacted]")
            copy.code = copy.code.replacing(secret, with: "[redacted]")
        }
        return copy
    }
}

/// The Firebase-specific claims of an ID token that tokend reads (the generic ones are in
/// `JWTClaims`). Signatures are not checked: the token came over TLS from its issuer.
public struct FirebaseClaims: Sendable, Equatable {
    public var uid: String?
    public var email: String?
    public var emailVerified: Bool?
    public var signInProvider: String?
    /// `firebase.tenant`: the Identity Platform tenant of the user, nil for the project's own.
    public var tenant: String?
    public var authTime: Date?
    public var issuedAt: Date?
    public var expiresAt: Date?
    /// Every claim as JSON text, for `account show` (custom claims included).
    public var payload: [UInt8]

    private struct Payload: Decodable {
        struct Firebase: Decodable {
            var sign_in_provider: String?
            var tenant: String?
        }
        var user_id: String?
        var sub: String?
        var email: String?
        var email_verified: Bool?
        var firebase: Firebase?
        var auth_time: Double?
        var iat: Double?
        var exp: Double?
    }

    public init?(token: String) {
        guard let decoded = JWTClaims.decode(Payload.self, from: token), let bytes = JWTClaims.payloadBytes(of: token) else { return nil }
        uid = decoded.user_id ?? decoded.sub
        email = decoded.email
        emailVerified = decoded.email_verified
        signInProvider = decoded.firebase?.sign_in_provider
        tenant = decoded.firebase?.tenant
        authTime = decoded.auth_time.flatMap(JWTClaims.instant)
        issuedAt = decoded.iat.flatMap(JWTClaims.instant)
        expiresAt = decoded.exp.flatMap(JWTClaims.instant)
        payload = Array(bytes)
    }
}
