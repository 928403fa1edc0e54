import TokendCore
import TokendProtocol
import TokendProviders

extension RequestHandler {
    /// The `account` op's actions (docs/protocol.md).
    enum AccountAction: String, CaseIterable {
        case show
        case verifyEmail = "verify_email"
        case resetPassword = "reset_password"
        case upgrade, delete
    }

    /// The `account` op: Firebase account management.
    func accountAction(_ request: Request) async throws(TokendError) -> Reply {
        let name = try account(of: request)
        let names = AccountAction.allCases.map(\.rawValue).joined(separator: ", ")
        guard let actionName = request.action else { throw TokendError(.badRequest, "field \"action\" is required for op account (one of: \(names))") }
        guard let action = AccountAction(rawValue: actionName) else { throw TokendError(.badRequest, "field \"action\" must be one of: \(names)") }
        let timeout = request.method == "google" ? AccountEngine.defaultTimeout : try timeout(of: request)
        var response = Response(id: request.id)
        response.account = name
        switch action {
        case .show:
            let (user, claims) = try await engine.showUser(account: name, timeout: timeout).get()
            response.user = Self.profile(user, claims)
        case .verifyEmail:
            response.email = try await engine.sendVerificationEmail(account: name, timeout: timeout).get()
        case .resetPassword:
            let email = request.email?.trimmed
            response.email = try await engine.sendPasswordReset(account: name, email: email?.isEmpty == true ? nil : email).get()
        case .upgrade:
            switch request.method ?? "email" {
            case "email":
                guard let email = request.email?.trimmed, !email.isEmpty else { throw TokendError(.badRequest, "field \"email\" is required for upgrade with method email") }
                guard let password = request.secret, !password.isEmpty else {
                    throw TokendError(.badRequest, "field \"secret\" (the new password) is required for upgrade with method email")
                }
                let summary = try await engine.upgrade(account: name, email: email, password: password, timeout: timeout).get()
                fill(&response, account: name, expiresAt: summary.expiresAt)
                response.signInProvider = summary.signInProvider
            case "google":
                // Interactive (a browser sign-in at Google): streamed like a login.
                let loginTimeout = try Self.loginTimeout(request.timeout)
                return .stream(loginStream(id: request.id, account: name) { [engine] progress in
                    await engine.upgradeWithGoogle(account: name, timeout: loginTimeout, progress: progress)
                })
            default:
                throw TokendError(.badRequest, "field \"method\" must be email or google for upgrade")
            }
        case .delete:
            guard request.confirm == true else {
                throw TokendError(.badRequest, try await engine.describeDeletion(account: name).get())
            }
            try await engine.deleteUser(account: name, timeout: timeout).get()
        }
        return .response(response)
    }

    /// The provider's profile and the ID token's claims, as `account show` answers them.
    static func profile(_ user: ManagedUser, _ claims: FirebaseClaims?) -> AccountProfile {
        var profile = AccountProfile(uid: user.uid, providers: user.providers)
        profile.email = user.email ?? claims?.email
        profile.emailVerified = user.emailVerified ?? claims?.emailVerified
        profile.displayName = user.displayName
        profile.signInProvider = claims?.signInProvider
        profile.authTime = claims?.authTime.map(Timestamp.format)
        profile.createdAt = user.createdAt.map(Timestamp.format)
        profile.lastLoginAt = user.lastLoginAt.map(Timestamp.format)
        profile.disabled = user.disabled
        if let claims, let all = try? JSONDecoder().decode([String: AnyJSON].self, from: Data(claims.payload)) {
            profile.project = { if case .string(let audience)? = all["aud"] { return audience } else { return nil } }()
            let custom = all.filter { !Self.standardClaims.contains($0.key) }
            profile.customClaims = custom.isEmpty ? nil : custom
        }
        return profile
    }

    /// Claims every Firebase ID token has: what is left are the project's custom claims.
    static let standardClaims: Set<String> = [
        "iss", "aud", "auth_time", "user_id", "sub", "iat", "exp", "email", "email_verified", "firebase", "name", "picture",
        "phone_number", "jti", "nbf",
    ]
}
