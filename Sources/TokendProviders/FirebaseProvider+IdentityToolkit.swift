import TokendCore

/// Calls to the Identity Toolkit API v1 (`accounts:METHOD`): sign-in, sign-up and account
/// management. Every answer is read here, and every error becomes a `LoginFailure` whose
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
        /// `signInWithIdp` may answer 200 with an error here instead of an HTTP error.
        var errorMessage: String?
        var isNewUser: Bool?
    }

    /// POSTs `body` as JSON to `accounts:METHOD` and returns the 200 answer's bytes. `secrets`
    /// (password, tokens) are scrubbed from any message that might echo them.
    func identityToolkit(_ method: String, _ body: some Encodable, secrets: [String]) async -> Result<[UInt8], LoginFailure> {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        guard let bytes = try? encoder.encode(body) else {
            return .failure(LoginFailure(.badRequest, code: "bad_request", message: "the request could not be encoded"))
        }
        let url = endpoint(host: Self.identityToolkitHost, path: "/v1/accounts:\(method)")
        switch await transport.send(.json(url, Array(bytes))) {
        case .failure(let failure):
            return .failure(LoginFailure(.transient, code: failure.refreshFailure.code, message: "\(failure.message); check the network and try again"))
        case .success(let answer) where answer.status == 200:
            return .success(answer.body)
        case .success(let answer):
            return .failure(Self.signInFailure(status: answer.status, body: answer.body, secrets: secrets))
        }
    }

    /// Reads a sign-in answer: tokens, or the failure it carries (`errorMessage`, MFA).
    static func signedIn(_ body: [UInt8], provider: String) -> Result<SignedIn, LoginFailure> {
        guard let answer = try? JSONDecoder().decode(SignInAnswer.self, from: Data(body)) else {
            return .failure(LoginFailure(.transient, code: "malformed_response", message: "Firebase answered 200 with a body that is not a sign-in answer; try again"))
        }
        if let errorMessage = answer.errorMessage, !errorMessage.isEmpty {
            return .failure(failure(code: code(of: errorMessage), detail: errorMessage))
        }
        if answer.mfaPendingCredential != nil {
            return .failure(failure(code: "MFA_REQUIRED", detail: ""))
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
    /// envelope (and knows which statuses are transient); the code then picks the hint.
    static func signInFailure(status: Int, body: [UInt8], secrets: [String]) -> LoginFailure {
        let failure: LoginFailure
        switch RefreshClassifier.firebase(status: status, body: body, retryAfter: nil) {
        case .transient(let refresh, _):
            failure = LoginFailure(.transient, code: refresh.code, message: "Firebase is busy or failing (\(refresh.message)); try again later")
        case .misconfigured(let refresh) where refresh.code == "API_KEY_INVALID":
            failure = LoginFailure(.misconfigured, code: refresh.code, message: "Firebase rejects the account's api_key; copy the Web API key from the project settings into config.toml")
        case .misconfigured(let refresh), .needsLogin(let refresh):
            failure = Self.failure(code: refresh.code, detail: refresh.message)
        case .refreshed:
            failure = LoginFailure(.transient, code: "http_\(status)", message: "Firebase answered HTTP \(status); try again")
        }
        return failure.redacting(secrets)
    }

    /// `CODE : detail` → `CODE`.
    static func code(of message: String) -> String {
        message.split(separator: ":", maxSplits: 1).first.map(\.trimmed) ?? message
    }

    /// Every Identity Toolkit code a user can meet, with what it means and what to do.
    static func failure(code: String, detail: String) -> LoginFailure {
        let extra = detail.split(separator: ":", maxSplits: 1).dropFirst().first.map(\.trimmed) ?? ""
        switch code {
        case "INVALID_LOGIN_CREDENTIALS":
            return LoginFailure(.denied, code: code, message: "the email or password is wrong, or no such user exists; check both, or add --create to sign up")
        case "EMAIL_NOT_FOUND":
            return LoginFailure(.denied, code: code, message: "no user has this email; check it, or add --create to sign up")
        case "INVALID_PASSWORD":
            return LoginFailure(.denied, code: code, message: "the password is wrong; try again, or: tokenctl account reset-password ACCOUNT --email ADDRESS")
        case "USER_DISABLED":
            return LoginFailure(.denied, code: code, message: "the user is disabled in the Firebase project; ask the project's administrator")
        case "USER_NOT_FOUND":
            return LoginFailure(.denied, code: code, message: "the user no longer exists; sign in again or create a new one")
        case "EMAIL_EXISTS":
            return LoginFailure(.badRequest, code: code, message: "a user with this email already exists; sign in without --create")
        case "WEAK_PASSWORD":
            let why = extra.isEmpty ? "" : " (\(extra))"
            return LoginFailure(.badRequest, code: code, message: "Firebase refuses the password as too weak\(why); choose a longer one")
        case "INVALID_EMAIL", "MISSING_EMAIL":
            return LoginFailure(.badRequest, code: code, message: "the email address is not valid; check it")
        case "MISSING_PASSWORD":
            return LoginFailure(.badRequest, code: code, message: "no password was given; type it at the prompt or pipe it on stdin")
        case "OPERATION_NOT_ALLOWED":
            return LoginFailure(.misconfigured, code: code, message: "this sign-in method is disabled for the project; enable it in the Firebase console (Authentication, Sign-in method)")
        case "ADMIN_ONLY_OPERATION":
            return LoginFailure(.misconfigured, code: code, message: "the project lets only administrators do this (self sign-up or deletion is off); ask the project's administrator")
        case "TOO_MANY_ATTEMPTS_TRY_LATER":
            return LoginFailure(.transient, code: code, message: "Firebase blocks requests from this user or device for a while after too many attempts; try again later")
        case "CREDENTIAL_TOO_OLD_LOGIN_AGAIN":
            return LoginFailure(.denied, code: code, message: "this needs a recent sign-in; sign in again (tokenctl login ACCOUNT …), then repeat the command")
        case "INVALID_ID_TOKEN", "TOKEN_EXPIRED", "INVALID_REFRESH_TOKEN":
            return LoginFailure(.denied, code: code, message: "the session is no longer valid; sign in again")
        case "INVALID_IDP_RESPONSE":
            return LoginFailure(.denied, code: code, message: "Firebase did not accept the identity provider's answer (an expired ID token or one for another client); sign in again")
        case "FEDERATED_USER_ID_ALREADY_LINKED":
            return LoginFailure(.denied, code: code, message: "this Google account already belongs to another user of the project; sign in with it (tokenctl login ACCOUNT --google) instead of upgrading")
        case "INVALID_CUSTOM_TOKEN", "MISSING_CUSTOM_TOKEN":
            return LoginFailure(.denied, code: code, message: "Firebase does not accept the custom token (malformed, expired or for another project); mint a new one")
        case "CREDENTIAL_MISMATCH":
            return LoginFailure(.misconfigured, code: code, message: "the custom token was minted for another Firebase project than the account's api_key; check both")
        case "MFA_REQUIRED":
            return LoginFailure(.misconfigured, code: code, message: "this user has a second factor (multi-factor authentication), which tokend does not support yet; use a user without one, or a custom token")
        case "PROJECT_NOT_FOUND", "CONFIGURATION_NOT_FOUND":
            return LoginFailure(.misconfigured, code: code, message: "Firebase has no such project or Authentication is not set up for it; check the account's api_key")
        default:
            let said = detail.isEmpty ? code : detail
            return LoginFailure(.misconfigured, code: code.isEmpty ? "unknown" : code, message: "Firebase refused the request (\(said)); check the account's configuration")
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
    public var authTime: Date?
    public var issuedAt: Date?
    public var expiresAt: Date?
    /// Every claim as JSON text, for `account show` (custom claims included).
    public var payload: [UInt8]

    private struct Payload: Decodable {
        struct Firebase: Decodable { var sign_in_provider: String? }
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
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let bytes = JWTClaims.base64URLDecode(parts[1]),
            let decoded = try? JSONDecoder().decode(Payload.self, from: bytes)
        else { return nil }
        uid = decoded.user_id ?? decoded.sub
        email = decoded.email
        emailVerified = decoded.email_verified
        signInProvider = decoded.firebase?.sign_in_provider
        authTime = decoded.auth_time.flatMap(JWTClaims.instant)
        issuedAt = decoded.iat.flatMap(JWTClaims.instant)
        expiresAt = decoded.exp.flatMap(JWTClaims.instant)
        payload = Array(bytes)
    }
}
