import Foundation
import TokendCore

/// Sign-in through the Identity Toolkit API v1: enough of it for demos and the daemon's login
/// features. Bodies are JSON; answers use production's camelCase names and string `expiresIn`.
extension FakeFirebase.Backend {
    static let identityToolkitService = "identitytoolkit.googleapis.com"
    /// Firebase refuses passwords shorter than 6 characters (`WEAK_PASSWORD`).
    static let minimumPasswordLength = 6
    /// Firebase uids are at most 128 characters; a custom token's uid longer than that is refused.
    static let maximumUIDLength = 128

    private struct Credentials: Decodable {
        var email: String?
        var password: String?
    }

    private struct CustomToken: Decodable {
        var token: String?
    }

    /// Production's answer fields; `nil` ones are left out.
    struct SignInResponse: Encodable {
        var kind: String
        var localId: String
        var email: String?
        var idToken: String
        var refreshToken: String
        var expiresIn: String
        var registered: Bool?
        var isNewUser: Bool?
        // signInWithIdp
        var providerId: String?
        var federatedId: String?
        var emailVerified: Bool?
    }

    /// What one Identity Toolkit method answered: the reply, and what the log should record.
    struct ToolkitAnswer {
        var reply: Reply
        var uid: String?
        var minted: Ledger.Minted?
    }

    /// `POST /identitytoolkit.googleapis.com/v1/accounts:METHOD`.
    func identityToolkit(
        _ method: String, _ request: IncomingRequest, state: inout State, log: inout [FakeFirebase.Request]
    ) -> Decision {
        let now = state.options.clock.now()
        var entry = FakeFirebase.Request(at: now, method: request.method, path: request.path)
        let outcome: Result<ToolkitAnswer, FirebaseRejection>
        if request.method != "POST" {
            outcome = .failure(.http(404))
        } else if let rejection = state.options.rejectAPIKey(request.apiKey, service: Self.identityToolkitService) {
            outcome = .failure(rejection)
        } else {
            switch method {
            case "signUp": outcome = signUp(request.body, now: now, state: &state).map(signedIn)
            case "signInWithPassword": outcome = signInWithPassword(request.body, now: now, state: &state)
            case "signInWithCustomToken": outcome = signInWithCustomToken(request.body, now: now, state: &state).map(signedIn)
            case "signInWithIdp": outcome = signInWithIdp(request.body, now: now, state: &state)
            case "lookup": outcome = lookup(request.body, now: now, state: &state)
            case "sendOobCode": outcome = sendOobCode(request.body, now: now, state: &state)
            case "update": outcome = update(request.body, now: now, state: &state)
            case "delete": outcome = delete(request.body, now: now, state: &state)
            default: outcome = .failure(.http(404))
            }
        }
        let reply: Reply
        switch outcome {
        case .success(let answer):
            entry.uid = answer.uid
            if let minted = answer.minted {
                entry.issuedRefreshToken = minted.refreshToken
                entry.issuedIDToken = minted.idToken
                entry.issuedExpiresAt = now.addingTimeInterval(Double(minted.lifetime))
            }
            reply = answer.reply
        case .failure(let rejection):
            entry.errorCode = rejection.code
            reply = .rejection(rejection)
        }
        entry.status = reply.status
        log.append(entry)
        let email = (try? FakeJSON.decode(Credentials.self, from: request.body))?.email
        let extra = email.flatMap { state.options.signInLatency[$0.lowercased()] } ?? 0
        return Decision(action: .reply(reply), delay: state.options.latency + extra)
    }

    private func signedIn(_ response: SignInResponse) -> ToolkitAnswer {
        ToolkitAnswer(
            reply: .json(200, response), uid: response.localId,
            minted: Ledger.Minted(
                uid: response.localId, email: response.email, refreshToken: response.refreshToken, idToken: response.idToken,
                expiresAt: Date(), lifetime: Int(response.expiresIn) ?? 0))  // conversion: a failable parse of a String
    }

    /// No email and no password: an anonymous user. Both: a password user.
    private func signUp(_ body: [UInt8], now: Date, state: inout State) -> Result<SignInResponse, FirebaseRejection> {
        guard let credentials = try? FakeJSON.decode(Credentials.self, from: body) else { return .failure(.invalidJSONPayload) }
        if state.options.adminOnlySignUp { return .failure(.firebase("ADMIN_ONLY_OPERATION")) }
        let email = credentials.email.flatMap { $0.isEmpty ? nil : $0 }
        let password = credentials.password.flatMap { $0.isEmpty ? nil : $0 }
        switch (email, password) {
        case (nil, nil):
            if state.options.disabledProviders.contains("anonymous") { return .failure(.firebase("OPERATION_NOT_ALLOWED")) }
            let user = state.ledger.addUser(email: nil, password: nil, now: now)
            let minted = state.ledger.signIn(uid: user.uid, provider: "anonymous", now: now, options: state.options)
            return .success(response("identitytoolkit#SignupNewUserResponse", minted))
        case (nil, _?):
            return .failure(.firebase("MISSING_EMAIL"))
        case (_?, nil):
            return .failure(.firebase("MISSING_PASSWORD"))
        case (let email?, let password?):
            if state.options.disabledProviders.contains("password") { return .failure(.firebase("OPERATION_NOT_ALLOWED")) }
            guard email.contains("@") else { return .failure(.firebase("INVALID_EMAIL")) }
            guard password.count >= Self.minimumPasswordLength else {
                return .failure(.firebase("WEAK_PASSWORD : Password should be at least 6 characters"))
            }
            guard state.ledger.user(withEmail: email) == nil else { return .failure(.firebase("EMAIL_EXISTS")) }
            let user = state.ledger.addUser(email: email, password: password, now: now)
            let minted = state.ledger.signIn(uid: user.uid, provider: "password", now: now, options: state.options)
            return .success(response("identitytoolkit#SignupNewUserResponse", minted))
        }
    }

    /// With email-enumeration protection on (the default for new projects), an unknown email and
    /// a wrong password both answer `INVALID_LOGIN_CREDENTIALS`; off, they are told apart. A
    /// user with a second factor gets `mfaPendingCredential` instead of tokens.
    private func signInWithPassword(_ body: [UInt8], now: Date, state: inout State) -> Result<ToolkitAnswer, FirebaseRejection> {
        guard let credentials = try? FakeJSON.decode(Credentials.self, from: body) else { return .failure(.invalidJSONPayload) }
        if state.options.disabledProviders.contains("password") { return .failure(.firebase("OPERATION_NOT_ALLOWED")) }
        guard let email = credentials.email, !email.isEmpty else { return .failure(.firebase("INVALID_EMAIL")) }
        guard let password = credentials.password, !password.isEmpty else { return .failure(.firebase("MISSING_PASSWORD")) }
        if let limit = state.options.maximumFailedSignIns, state.failedSignIns >= limit {
            return .failure(.firebase("TOO_MANY_ATTEMPTS_TRY_LATER : Access to this account has been temporarily disabled due to many failed login attempts."))
        }
        let protected = state.options.emailEnumerationProtection
        guard let user = state.ledger.user(withEmail: email) else {
            state.failedSignIns += 1
            return .failure(.firebase(protected ? "INVALID_LOGIN_CREDENTIALS" : "EMAIL_NOT_FOUND"))
        }
        guard user.password == password else {
            state.failedSignIns += 1
            return .failure(.firebase(protected ? "INVALID_LOGIN_CREDENTIALS" : "INVALID_PASSWORD"))
        }
        if user.disabled { return .failure(.firebase("USER_DISABLED")) }
        if user.secondFactor {
            let pending = MFAPending(
                localId: user.uid, email: user.email, mfaPendingCredential: "mfa-pending-" + FakeIdentifiers.nonce(),
                mfaInfo: [.init(mfaEnrollmentId: "enrollment-1", phoneInfo: "+*******1234")])
            return .success(ToolkitAnswer(reply: .json(200, pending), uid: user.uid))
        }
        let minted = state.ledger.signIn(uid: user.uid, provider: "password", now: now, options: state.options)
        var answer = response("identitytoolkit#VerifyPasswordResponse", minted)
        answer.registered = true
        return .success(signedIn(answer))
    }

    /// A password sign-in of a user with a second factor: no tokens, only what continues it.
    private struct MFAPending: Encodable {
        struct Info: Encodable {
            var mfaEnrollmentId: String
            var phoneInfo: String
        }
        var kind = "identitytoolkit#VerifyPasswordResponse"
        var localId: String
        var email: String?
        var mfaPendingCredential: String
        var mfaInfo: [Info]
    }

    /// Signatures are not checked (like the emulator): a JWT's `uid` claim names the user, and a
    /// plain string that could be a uid is taken as one. Unknown uids become new users.
    private func signInWithCustomToken(_ body: [UInt8], now: Date, state: inout State) -> Result<SignInResponse, FirebaseRejection> {
        guard let request = try? FakeJSON.decode(CustomToken.self, from: body) else { return .failure(.invalidJSONPayload) }
        guard let token = request.token, !token.isEmpty else { return .failure(.firebase("MISSING_CUSTOM_TOKEN")) }
        guard let uid = Self.customTokenUID(token) else { return .failure(.firebase("INVALID_CUSTOM_TOKEN")) }
        let isNewUser = state.ledger.users[uid] == nil
        if isNewUser {
            _ = state.ledger.addUser(email: nil, password: nil, uid: uid, now: now)
        } else if state.ledger.users[uid]?.disabled == true {
            return .failure(.firebase("USER_DISABLED"))
        }
        let minted = state.ledger.signIn(uid: uid, provider: "custom", now: now, options: state.options)
        var answer = response("identitytoolkit#VerifyCustomTokenResponse", minted)
        answer.isNewUser = isNewUser
        return .success(answer)
    }

    private struct CustomTokenClaims: Decodable {
        var uid: String?
    }

    static func customTokenUID(_ token: String) -> String? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        if parts.count == 3 {
            guard let payload = JWTClaims.base64URLDecode(parts[1]),
                let claims = try? JSONDecoder().decode(CustomTokenClaims.self, from: payload),
                let uid = claims.uid, !uid.isEmpty, uid.count <= maximumUIDLength
            else { return nil }
            return uid
        }
        let allowed = token.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }
        return allowed && token.count <= maximumUIDLength ? token : nil
    }

    func response(_ kind: String, _ minted: Ledger.Minted) -> SignInResponse {
        SignInResponse(
            kind: kind, localId: minted.uid, email: minted.email, idToken: minted.idToken,
            refreshToken: minted.refreshToken, expiresIn: String(minted.lifetime))
    }
}
