import Foundation
import TokendCore
import TokendProviders
import TokendSystem

/// Identity Toolkit account management and federated sign-in: `signInWithIdp`, `lookup`,
/// `sendOobCode`, `delete`, in production's shapes.
extension FakeFirebase.Backend {
    private struct IDTokenBody: Decodable {
        var idToken: String?
    }

    private struct IdpBody: Decodable {
        var requestUri: String?
        var postBody: String?
        var idToken: String?
        var returnIdpCredential: Bool?
    }

    private struct OobBody: Decodable {
        var requestType: String?
        var email: String?
        var idToken: String?
    }

    /// The claims the fake reads, of its own ID tokens and of identity providers' credentials.
    struct TokenClaims: Decodable {
        var user_id: String?
        var sub: String?
        var exp: Double?
        var iat: Double?
        var auth_time: Double?
        var iss: String?
        var email_verified: Bool?
        /// A JWT's `aud` is one string or an array of them (RFC 7519 §4.1.3): the first counts.
        var aud: String?
        var email: String?
        /// A provider's ID token: Microsoft's tenant, and the nonce Firebase checks.
        var tid: String?
        var nonce: String?

        enum CodingKeys: String, CodingKey { case user_id, sub, exp, iat, auth_time, iss, aud, email, email_verified, tid, nonce }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            user_id = try container.decodeIfPresent(String.self, forKey: .user_id)
            sub = try container.decodeIfPresent(String.self, forKey: .sub)
            exp = try container.decodeIfPresent(Double.self, forKey: .exp)
            iat = try? container.decodeIfPresent(Double.self, forKey: .iat)
            // Apple sends "true" as a string (Sign in with Apple REST API, "Authenticating users").
            email_verified = (try? container.decodeIfPresent(Bool.self, forKey: .email_verified))
                ?? (try? container.decodeIfPresent(String.self, forKey: .email_verified)).map { $0 == "true" }
            auth_time = try container.decodeIfPresent(Double.self, forKey: .auth_time)
            iss = try container.decodeIfPresent(String.self, forKey: .iss)
            aud = (try? container.decodeIfPresent(String.self, forKey: .aud)) ?? (try? container.decodeIfPresent([String].self, forKey: .aud))?.first
            email = try? container.decodeIfPresent(String.self, forKey: .email)
            tid = try? container.decodeIfPresent(String.self, forKey: .tid)
            nonce = try? container.decodeIfPresent(String.self, forKey: .nonce)
        }
    }

    static func claims(of token: String) -> TokenClaims? {
        JWTClaims.decode(TokenClaims.self, from: token)
    }

    /// The user an ID token of this project names, in the emulator's order (operations.ts
    /// `parseIdToken`): readable, the user exists, issued since `validSince` (else
    /// `TOKEN_EXPIRED`), not disabled. Signatures are not checked (like the emulator); expiry
    /// is (production).
    func user(of idToken: String?, now: Date, state: State) -> Result<(Ledger.User, TokenClaims), FirebaseRejection> {
        guard let idToken, !idToken.isEmpty else { return .failure(.firebase("MISSING_ID_TOKEN")) }
        guard let claims = Self.claims(of: idToken), let uid = claims.user_id ?? claims.sub,
            claims.iss == "https://securetoken.google.com/\(state.options.projectID)"
        else { return .failure(.firebase("INVALID_ID_TOKEN")) }
        guard let exp = claims.exp, exp > now.timeIntervalSince1970 else { return .failure(.firebase("TOKEN_EXPIRED")) }
        guard let user = state.ledger.users[uid] else { return .failure(.firebase("USER_NOT_FOUND")) }
        // emulator `parseIdToken`: a tenant's token for another tenant; a token of the project's
        // own users is looked up among the tenant's, where it is not.
        if let tenant = user.tenant, tenant != state.ledger.tenant { return .failure(.firebase("TENANT_ID_MISMATCH")) }
        if user.tenant == nil, state.ledger.tenant != nil { return .failure(.firebase("USER_NOT_FOUND")) }
        guard (claims.iat ?? 0) >= Double(user.validSince) else { return .failure(.firebase("TOKEN_EXPIRED")) }
        if user.disabled { return .failure(.firebase("USER_DISABLED")) }
        return .success((user, claims))
    }

    /// Sensitive changes need a sign-in younger than `recentSignInWindow` (production: 5 min).
    private func requireRecentSignIn(_ claims: TokenClaims, now: Date, state: State) -> FirebaseRejection? {
        guard let window = state.options.recentSignInWindow, let authTime = claims.auth_time else { return nil }
        return now.timeIntervalSince1970 - authTime > window ? .firebase("CREDENTIAL_TOO_OLD_LOGIN_AGAIN") : nil
    }

    /// `accounts:signInWithIdp` for any provider the project enables, in the emulator's order
    /// (operations.ts `signInWithIdp`, `parseClaims`, `fakeFetchUserInfoFromIdp`, `handleLinkIdp`,
    /// `handleIdpSigninEmailRequired`): the request URI, the provider id (lower-cased), the
    /// credential — claims from `id_token`, else from `access_token` as JSON or a JWT (emulator),
    /// else from the provider's user API (production; `IdentityProvider.userInfo`); every
    /// failure is `INVALID_IDP_RESPONSE`, always HTTP 400 — then the linking user. A sign-in
    /// finds the user the provider's id is linked to, else — one account per email — the user
    /// with its address: taken over when the provider verified it, else `needConfirmation`
    /// (200, no tokens); else a new user. Linking keeps the uid. `FEDERATED_USER_ID_ALREADY_LINKED`
    /// and `EMAIL_EXISTS` answer 200 with `errorMessage` when `returnIdpCredential` is true, else 400.
    func signInWithIdp(_ body: [UInt8], now: Date, state: inout State) -> Result<ToolkitAnswer, FirebaseRejection> {
        guard let request = try? FakeJSON.decode(IdpBody.self, from: body) else { return .failure(.invalidJSONPayload) }
        guard let requestUri = request.requestUri, !requestUri.isEmpty else { return .failure(.firebase("MISSING_REQUEST_URI")) }
        guard let uri = URLComponents(string: requestUri), uri.scheme != nil, uri.host?.isEmpty == false else {
            return .failure(.firebase("INVALID_REQUEST_URI"))
        }
        let form = FormEncoding.decode(Substring(request.postBody ?? ""))
        guard let providerID = form["providerId"]?.lowercased(), !providerID.isEmpty else {
            return .failure(.firebase("INVALID_CREDENTIAL_OR_PROVIDER_ID : Invalid IdP response/credential: \(requestUri)"))
        }
        guard providerID.contains(".") else { return .failure(.firebase("INVALID_PROVIDER_ID : Provider Id is not supported.")) }
        // production: Microsoft takes only the project's own handler's sign-in; a token the
        // client obtained itself (sent with the SDKs' `http://localhost`) is refused, credential
        // echoed (firebase-js-sdk#5802, #8913; flutterfire#10865, where the emulator takes it).
        if state.options.clientCredentialsRefused.contains(providerID), uri.path != FakeFirebase.hostedHandlerPath {
            return .failure(.firebase("INVALID_CREDENTIAL_OR_PROVIDER_ID : Invalid IdP response/credential: \(requestUri)?\(request.postBody ?? "")"))
        }
        // production: a provider the project has not enabled, or switched off in the console.
        guard let configured = state.options.identityProviders[providerID], !state.options.disabledProviders.contains(providerID) else {
            return .failure(.firebase("OPERATION_NOT_ALLOWED"))
        }
        // emulator `parseClaims`: an access token it cannot read is NotImplementedError (501).
        if state.options.answersAsAuthEmulator, form["id_token"]?.isEmpty ?? true, let token = form["access_token"], Self.idpClaims(token) == nil {
            return .failure(.firebase("The Auth Emulator does not support \(providerID) sign-in with credentials.", status: 501))
        }
        let federated: FederatedClaims
        switch Self.federatedClaims(form, provider: configured, id: providerID, projectNumber: state.options.projectNumber, now: now) {
        case .failure(let rejection): return .failure(rejection)
        case .success(let claims): federated = claims
        }
        let subject = federated.sub
        var linking: Ledger.User?
        if let idToken = request.idToken {
            switch user(of: idToken, now: now, state: state) {
            case .failure(let rejection): return .failure(rejection)
            case .success(let (found, _)): linking = found
            }
        }
        func refused(_ code: String) -> Result<ToolkitAnswer, FirebaseRejection> {
            guard request.returnIdpCredential == true else { return .failure(.firebase(code)) }
            return .success(ToolkitAnswer(reply: .json(200, IdpError(errorMessage: code)), uid: nil))
        }
        // emulator `fakeFetchUserInfoFromIdp`: Google's federated id is a URL, the others' the raw id.
        let federatedID = providerID == "google.com" ? "https://accounts.google.com/\(subject)" : subject
        let owner = federated.email.flatMap { state.ledger.user(withEmail: $0) }
        var uid: String
        var isNewUser = false
        if let linking {
            if state.ledger.user(linkedTo: providerID, rawID: subject) != nil { return refused("FEDERATED_USER_ID_ALREADY_LINKED") }
            if state.options.oneAccountPerEmail, let owner, owner.uid != linking.uid { return refused("EMAIL_EXISTS") }
            uid = linking.uid
        } else if let existing = state.ledger.user(linkedTo: providerID, rawID: subject) {
            uid = existing.uid
        } else if state.options.oneAccountPerEmail, let owner {
            guard federated.emailVerified else {
                // emulator `handleIdpSigninEmailRequired`: the owner's providers, password and
                // phone left out; an empty list means the owner signs in with its password.
                let verified = owner.federated.keys.sorted()
                return .success(ToolkitAnswer(
                    reply: .json(200, NeedConfirmation(
                        providerId: providerID, localId: owner.uid, email: owner.email ?? "", federatedId: federatedID,
                        verifiedProvider: verified)),
                    uid: nil))
            }
            // The provider vouches for the address: the user is the provider's now. An unverified
            // owner loses every provider and its sessions (someone else may have set them up;
            // emulator `handleIdpSigninEmailRequired`, `deleteProviders`).
            if !owner.emailVerified {
                _ = state.ledger.change(owner.uid) {
                    $0.password = nil
                    $0.federated = [:]
                }
                _ = state.ledger.revokeTokens(of: owner.uid, now: now)
            }
            uid = owner.uid
        } else {
            uid = state.ledger.addUser(email: nil, password: nil, now: now).uid
            isNewUser = true
        }
        // emulator: a disabled user is refused only after the link is recorded.
        _ = state.ledger.change(uid) { user in
            user.federated[providerID] = subject
            if user.email == nil, let email = federated.email {
                user.email = email
                user.emailVerified = federated.emailVerified
            } else if user.email?.lowercased() == federated.email?.lowercased(), federated.emailVerified {
                user.emailVerified = true
            }
        }
        if state.ledger.users[uid]?.disabled == true { return .failure(.firebase("USER_DISABLED")) }
        if request.idToken == nil, let user = state.ledger.users[uid],
            let pending = secondFactorPending(user, provider: providerID, kind: "identitytoolkit#VerifyAssertionResponse", now: now, state: &state)
        {
            return .success(pending)
        }
        let minted = state.ledger.signIn(uid: uid, provider: providerID, now: now, options: state.options)
        var answer = response("identitytoolkit#VerifyAssertionResponse", minted)
        answer.providerId = providerID
        answer.federatedId = federatedID
        answer.emailVerified = state.ledger.users[uid]?.emailVerified
        answer.isNewUser = isNewUser ? true : nil
        answer.tenantId = state.ledger.tenant
        return .success(ToolkitAnswer(reply: .json(200, answer), uid: uid, minted: minted))
    }

    /// Who the provider says signed in.
    struct FederatedClaims {
        var sub: String
        var email: String?
        var emailVerified: Bool
    }

    /// The claims of the credential in `postBody`. An ID token: readable (a JWT or strict JSON,
    /// emulator `parseClaims`) with a `sub`; then, production only, an issuer of the provider's,
    /// unexpired, issued to one of its clients, and — when it carries a nonce — the raw nonce
    /// whose SHA-256 (hex) it is (firebase-js-sdk `OAuthCredentialOptions.rawNonce`; the code
    /// is the js-sdk map's `MISSING_OR_INVALID_NONCE`). An access token: JSON or a JWT
    /// (emulator), else whatever the provider's user API says of it (production).
    static func federatedClaims(
        _ form: [String: String], provider: FakeFirebase.IdentityProvider, id: String, projectNumber: String, now: Date
    ) -> Result<FederatedClaims, FirebaseRejection> {
        if let idToken = form["id_token"], !idToken.isEmpty {
            guard let claims = Self.idpClaims(idToken), let subject = claims.sub, !subject.isEmpty else {
                return .failure(.firebase("INVALID_IDP_RESPONSE : Unable to parse id_token"))
            }
            if !provider.issuers.isEmpty, !provider.issuers.contains(where: { IssuerTemplate.matches($0, issuer: claims.iss, tenant: claims.tid) }) {
                return .failure(.firebase("INVALID_IDP_RESPONSE : Unable to parse id_token"))
            }
            guard let exp = claims.exp, exp > now.timeIntervalSince1970 else {
                return .failure(.firebase("INVALID_IDP_RESPONSE : The supplied auth credential is malformed or has expired."))
            }
            if !provider.clientIDs.isEmpty, !provider.clientIDs.contains(claims.aud ?? "") {
                // Production's words for Google (fidelity round 4); other providers' are not recorded.
                let name = id == "google.com" ? "Google" : id
                return .failure(.firebase(
                    "INVALID_IDP_RESPONSE : Invalid Idp Response: the \(name) id_token is not allowed to be used with this application. Its audience (OAuth 2.0 client ID) is \(claims.aud ?? ""), which is not authorized to be used in the project with project_number: \(projectNumber)."))
            }
            if let nonce = claims.nonce {
                // Production's texts: firebase-js-sdk#7957, flutterfire#6594 (missing);
                // firebase-ios-sdk#10462 (a mismatch, both values quoted).
                guard let raw = form["nonce"] else { return .failure(.firebase("MISSING_OR_INVALID_NONCE : Nonce is missing in the request.")) }
                guard OIDCProvider.sha256Hex(raw) == nonce else {
                    return .failure(.firebase(
                        "MISSING_OR_INVALID_NONCE : The nonce in ID Token \"\(nonce)\" does not match the SHA256 hash of the raw nonce \"\(raw)\" in the request."))
                }
            }
            return .success(FederatedClaims(sub: subject, email: claims.email, emailVerified: claims.email_verified == true))
        }
        guard let accessToken = form["access_token"], !accessToken.isEmpty else {
            return .failure(.firebase("INVALID_IDP_RESPONSE : the credential holds neither id_token nor access_token"))
        }
        if let claims = Self.idpClaims(accessToken), let subject = claims.sub, !subject.isEmpty {
            return .success(FederatedClaims(sub: subject, email: claims.email, emailVerified: claims.email_verified == true))
        }
        guard let info = provider.userInfo?(accessToken), let subject = info["sub"], !subject.isEmpty else {
            return .failure(.firebase("INVALID_IDP_RESPONSE : The supplied auth credential is malformed or has expired."))
        }
        return .success(FederatedClaims(sub: subject, email: info["email"], emailVerified: info["email_verified"] == "true"))
    }

    /// A credential's claims: a JWT's payload, or strict JSON (the emulator's fake tokens).
    static func idpClaims(_ token: String) -> TokenClaims? {
        if token.hasPrefix("{") { return try? JSONDecoder().decode(TokenClaims.self, from: Data(token.utf8)) }
        return claims(of: token)
    }

    /// One account per email, an address the provider did not verify: 200 without tokens.
    private struct NeedConfirmation: Encodable {
        var kind = "identitytoolkit#VerifyAssertionResponse"
        var providerId: String
        var localId: String
        var email: String
        var federatedId: String
        var verifiedProvider: [String]
        var needConfirmation = true
    }

    private struct IdpError: Encodable {
        var kind = "identitytoolkit#VerifyAssertionResponse"
        var errorMessage: String
    }

    /// `accounts:lookup`: the user behind an ID token.
    func lookup(_ body: [UInt8], now: Date, state: inout State) -> Result<ToolkitAnswer, FirebaseRejection> {
        guard let request = try? FakeJSON.decode(IDTokenBody.self, from: body) else { return .failure(.invalidJSONPayload) }
        switch user(of: request.idToken, now: now, state: state) {
        case .failure(let rejection): return .failure(rejection)
        case .success(let (user, _)):
            return .success(ToolkitAnswer(reply: .json(200, LookupResponse(users: [UserInfo(user)])), uid: user.uid))
        }
    }

    struct LookupResponse: Encodable {
        var kind = "identitytoolkit#GetAccountInfoResponse"
        var users: [UserInfo]
    }

    /// A user as `lookup` and `update` describe it (production's field names; times in ms as strings).
    struct UserInfo: Encodable {
        struct Provider: Encodable {
            var providerId: String
            var federatedId: String
            var email: String?
            var rawId: String
        }
        var localId: String
        var email: String?
        var emailVerified: Bool
        var passwordHash: String?
        var providerUserInfo: [Provider]
        var disabled: Bool?
        var createdAt: String
        var lastLoginAt: String
        var mfaInfo: [FakeFirebase.Backend.MFAInfo]?

        init(_ user: Ledger.User) {
            localId = user.uid
            email = user.email
            emailVerified = user.emailVerified
            passwordHash = user.password == nil ? nil : "UkVEQUNURUQ="  // production's placeholder
            providerUserInfo = user.providers.map { provider in
                let raw = user.federated[provider] ?? user.email ?? ""
                return Provider(providerId: provider, federatedId: raw, email: user.email, rawId: raw)
            }
            disabled = user.disabled ? true : nil
            createdAt = String(user.createdAt)
            lastLoginAt = String(user.lastLoginAt)
            mfaInfo = user.factors.isEmpty ? nil : user.factors.map(FakeFirebase.Backend.MFAInfo.init)
        }
    }

    /// `accounts:sendOobCode`: the fake records the email it would send. With email-enumeration
    /// protection a reset for an unknown address still answers 200, like production.
    func sendOobCode(_ body: [UInt8], now: Date, state: inout State) -> Result<ToolkitAnswer, FirebaseRejection> {
        guard let request = try? FakeJSON.decode(OobBody.self, from: body) else { return .failure(.invalidJSONPayload) }
        switch request.requestType {
        case "PASSWORD_RESET":
            guard let email = request.email, !email.isEmpty else { return .failure(.firebase("MISSING_EMAIL")) }
            guard email.contains("@") else { return .failure(.firebase("INVALID_EMAIL")) }
            let user = state.ledger.user(withEmail: email)
            if user == nil, !state.options.emailEnumerationProtection { return .failure(.firebase("EMAIL_NOT_FOUND")) }
            if user != nil { state.sentEmails.append(FakeFirebase.SentEmail(kind: "PASSWORD_RESET", email: email, uid: user?.uid)) }
            return .success(ToolkitAnswer(reply: .json(200, OobResponse(email: email)), uid: user?.uid))
        case "VERIFY_EMAIL":
            switch user(of: request.idToken, now: now, state: state) {
            case .failure(let rejection): return .failure(rejection)
            case .success(let (user, _)):
                guard let email = user.email else { return .failure(.firebase("MISSING_EMAIL")) }
                state.sentEmails.append(FakeFirebase.SentEmail(kind: "VERIFY_EMAIL", email: email, uid: user.uid))
                return .success(ToolkitAnswer(reply: .json(200, OobResponse(email: email)), uid: user.uid))
            }
        default:
            return .failure(.firebase("INVALID_REQ_TYPE : Unsupported request parameters."))
        }
    }

    private struct OobResponse: Encodable {
        var kind = "identitytoolkit#GetOobConfirmationCodeResponse"
        var email: String
    }

    /// `accounts:delete`: the user and every session of it are gone.
    func delete(_ body: [UInt8], now: Date, state: inout State) -> Result<ToolkitAnswer, FirebaseRejection> {
        guard let request = try? FakeJSON.decode(IDTokenBody.self, from: body) else { return .failure(.invalidJSONPayload) }
        let found = self.user(of: request.idToken, now: now, state: state)
        guard case .success(let (user, claims)) = found else { return .failure(found.rejection) }
        if state.options.adminOnlyDelete { return .failure(.firebase("ADMIN_ONLY_OPERATION")) }
        if let rejection = requireRecentSignIn(claims, now: now, state: state) { return .failure(rejection) }
        _ = state.ledger.delete(user.uid)
        return .success(ToolkitAnswer(reply: .json(200, DeleteResponse()), uid: user.uid))
    }

    private struct DeleteResponse: Encodable {
        var kind = "identitytoolkit#DeleteAccountResponse"
    }
}

extension FakeFirebase {
    /// An email the fake would have sent (`sendOobCode`).
    public struct SentEmail: Sendable, Equatable {
        /// `PASSWORD_RESET` or `VERIFY_EMAIL`.
        public var kind: String
        public var email: String
        public var uid: String?

        public init(kind: String, email: String, uid: String?) {
            self.kind = kind
            self.email = email
            self.uid = uid
        }
    }

    /// Every email the fake would have sent, oldest first.
    public var sentEmails: [SentEmail] { backend.state.withLock { $0.sentEmails } }

    /// Whether the fake still has the user (false once `accounts:delete` removed it).
    public func hasUser(_ uid: String) -> Bool { backend.state.withLock { $0.ledger.users[uid] != nil } }

    /// The user's email and sign-in methods as the fake holds them.
    public func user(_ uid: String) -> (email: String?, emailVerified: Bool, providers: [String])? {
        backend.state.withLock { state in
            state.ledger.users[uid].map { ($0.email, $0.emailVerified, $0.providers) }
        }
    }

    /// The user followed the verification link: `emailVerified` is true from now on.
    public func confirmEmailVerification(_ uid: String) {
        backend.state.withLock { _ = $0.ledger.change(uid) { $0.emailVerified = true } }
    }

    /// A user with `email` and no password, linked to `provider` as `rawID` (signed up with
    /// that provider elsewhere): its uid.
    public func createFederatedUser(email: String, provider: String, rawID: String) -> String {
        backend.state.withLock { state in
            let uid = state.ledger.addUser(email: email, password: nil, now: state.options.clock.now()).uid
            _ = state.ledger.change(uid) { $0.federated[provider] = rawID }
            return uid
        }
    }

    /// The user enrolls a text-message (SMS) second factor elsewhere: sign-ins answer
    /// `mfaPendingCredential` with its masked `phoneInfo`. Its enrollment id.
    @discardableResult
    public func enrollSecondFactor(_ uid: String, phone: String = "+*******1234", id: String? = nil) -> String {
        backend.state.withLock { state in
            let id = id ?? "phone-" + OIDCProvider.randomToken()
            let factor = Ledger.Factor(id: id, displayName: "phone", kind: .phone(phone), enrolledAt: state.options.clock.now())
            _ = state.ledger.change(uid) { $0.factors.append(factor) }
            return id
        }
    }

    /// The user enrolls a TOTP factor elsewhere (another app): its enrollment id and base32 secret.
    public func enrollTOTP(_ uid: String, displayName: String? = nil, id: String? = nil) -> (id: String, secret: String) {
        backend.state.withLock { state in
            let secret = TOTP.newSecret()
            let id = id ?? "totp-" + OIDCProvider.randomToken()
            let factor = Ledger.Factor(id: id, displayName: displayName, kind: .totp(secret: secret), enrolledAt: state.options.clock.now())
            _ = state.ledger.change(uid) { $0.factors.append(factor) }
            return (id, TOTP.base32(secret))
        }
    }

    /// The user's enrolled factors' ids.
    public func secondFactors(of uid: String) -> [String] {
        backend.state.withLock { $0.ledger.users[uid]?.factors.map(\.id) ?? [] }
    }

    /// An ID token as Google's issuer would mint it for `audience` (a client id), unsigned
    /// like the fake's own: what a Google sign-in hands over for `signInWithIdp`.
    public static func googleIDToken(
        subject: String, email: String?, audience: String, emailVerified: Bool = true, lifetime: Int = 3600, now: Date = SystemWallClock().now()
    ) -> String {
        struct Claims: Encodable {
            var iss = "https://accounts.google.com"
            var aud: String
            var sub: String
            var email: String?
            var email_verified: Bool?
            var iat: Int
            var exp: Int
        }
        let iat = Int(saturating: now.timeIntervalSince1970)
        let claims = Claims(aud: audience, sub: subject, email: email, email_verified: email.map { _ in emailVerified }, iat: iat, exp: iat + lifetime)
        let header = JWTClaims.base64URLEncode(Data(#"{"alg":"none","typ":"JWT"}"#.utf8))
        return header + "." + JWTClaims.base64URLEncode(FakeJSON.encode(claims)) + "."
    }
}
