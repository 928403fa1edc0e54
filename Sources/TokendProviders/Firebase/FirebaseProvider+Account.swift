import TokendCore

/// Account management through the Identity Toolkit API: `lookup`, `sendOobCode`, `signUp` and
/// `signInWithIdp` (linking) and `delete`.
extension FirebaseProvider: AccountManaging {
    private struct IDTokenBody: Encodable {
        var idToken: String
    }

    private struct OobBody: Encodable {
        var requestType: String
        var email: String?
        var idToken: String?
    }

    /// Linking an email and password to the signed-in (anonymous) user: `accounts:signUp` with
    /// the user's `idToken`, as firebase-js-sdk's `linkWithCredential` sends it
    /// (`EmailAuthCredential._linkToIdToken` calls `linkEmailPassword`, a POST to accounts:signUp).
    /// `accounts:update` would do it too, but projects with email enumeration protection (the
    /// default since September 2023) refuse it an email change the user has not verified.
    private struct LinkBody: Encodable {
        var idToken: String
        var email: String
        var password: String
        var returnSecureToken = true
    }

    private struct LookupAnswer: Decodable {
        struct User: Decodable {
            struct Provider: Decodable { var providerId: String? }
            var localId: String?
            var email: String?
            var emailVerified: Bool?
            var displayName: String?
            var providerUserInfo: [Provider]?
            /// Milliseconds since 1970, as a string.
            var createdAt: String?
            var lastLoginAt: String?
            var disabled: Bool?
            var mfaInfo: [MFAEnrollmentInfo]?
        }
        var users: [User]?
    }

    private struct OobAnswer: Decodable {
        var email: String?
    }

    public func lookup(idToken: String) async -> Result<ManagedUser, LoginFailure> {
        await identityToolkit(.lookup, IDTokenBody(idToken: idToken), secrets: [idToken]).flatMap { body in
            guard let answer = try? JSONDecoder().decode(LookupAnswer.self, from: Data(body)), let found = answer.users?.first,
                let uid = found.localId
            else {
                return .failure(Self.failure(code: "USER_NOT_FOUND", detail: "", call: .lookup))
            }
            func milliseconds(_ text: String?) -> Date? {
                guard let text, let value = Double(text), value >= 0, value < 253_402_300_799_000 else { return nil }
                return Date(timeIntervalSince1970: value / 1000)
            }
            var user = ManagedUser(uid: uid, providers: (found.providerUserInfo ?? []).compactMap(\.providerId))
            user.email = found.email
            user.emailVerified = found.emailVerified
            user.displayName = found.displayName
            user.createdAt = milliseconds(found.createdAt)
            user.lastLoginAt = milliseconds(found.lastLoginAt)
            user.disabled = found.disabled
            user.factors = (found.mfaInfo ?? []).compactMap(\.factor)
            return .success(user)
        }
    }

    public func sendVerificationEmail(idToken: String) async -> Result<String, LoginFailure> {
        await identityToolkit(.verifyEmail, OobBody(requestType: "VERIFY_EMAIL", idToken: idToken), secrets: [idToken]).map { body in
            (try? JSONDecoder().decode(OobAnswer.self, from: Data(body)))?.email ?? ""
        }
    }

    public func sendPasswordReset(email: String) async -> Result<Void, LoginFailure> {
        await identityToolkit(.passwordReset, OobBody(requestType: "PASSWORD_RESET", email: email), secrets: []).map { _ in () }
    }

    public func upgrade(idToken: String, email: String, password: String) async -> Result<SignedIn, LoginFailure> {
        await identityToolkit(.passwordLink, LinkBody(idToken: idToken, email: email, password: password), secrets: [idToken, password])
            .flatMap { Self.signedIn($0, provider: "password", call: .passwordLink) }
    }

    public func deleteUser(idToken: String) async -> Result<Void, LoginFailure> {
        await identityToolkit(.delete, IDTokenBody(idToken: idToken), secrets: [idToken]).map { _ in () }
    }

    private struct IdpBody: Encodable {
        var requestUri: String
        var postBody: String
        var idToken: String?
        var returnIdpCredential = false
        var returnSecureToken = true
    }

    /// An identity provider's sign-in exchanged for a Firebase session; with `linkingTo`, linked
    /// to that user instead (an anonymous upgrade keeps the uid).
    func signInWithIdp(_ credential: IdentityProviderCredential, providerID: String, linkingTo idToken: String?) async -> Result<SignedIn, LoginFailure> {
        let form = String(decoding: FormEncoding.encode(credential.postBody + [("providerId", providerID)]), as: UTF8.self)
        // `requestUri` must be an http(s) URL; for a credential exchange no redirect happens.
        // `http://localhost` is what the SDKs send for one (firebase-js-sdk
        // `packages/auth/src/core/credentials/oauth.ts`, `IDP_REQUEST_URI`).
        let body = IdpBody(requestUri: "http://localhost", postBody: form, idToken: idToken)
        let call: FirebaseCall = idToken == nil ? .idpSignIn(providerID) : .idpLink(providerID)
        let secrets = credential.secrets + (idToken.map { [$0] } ?? [])
        return await identityToolkit(call, body, secrets: secrets)
            .flatMap { Self.signedIn($0, provider: providerID, call: call, secrets: secrets) }
    }
}

/// What an identity provider returned, in the form Firebase's `signInWithIdp` takes it
/// (Identity Toolkit REST, "Sign in with OAuth credential": `postBody`).
enum IdentityProviderCredential: Sendable {
    /// An OpenID Connect ID token and, when it carries a nonce, the raw nonce whose SHA-256 it is.
    case idToken(String, rawNonce: String?)
    /// An OAuth 2.0 access token (GitHub): Firebase asks the provider who it belongs to.
    case accessToken(String)

    var postBody: [(String, String)] {
        switch self {
        case .idToken(let token, let nonce): [("id_token", token)] + (nonce.map { [("nonce", $0)] } ?? [])
        case .accessToken(let token): [("access_token", token)]
        }
    }

    /// Never logged: redacted from any error Firebase might echo them in.
    var secrets: [String] {
        switch self {
        case .idToken(let token, let nonce): [token] + (nonce.map { [$0] } ?? [])
        case .accessToken(let token): [token]
        }
    }
}
