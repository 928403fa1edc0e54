import TokendCore
import TokendProtocol
import TokendProviders

/// `account`: Firebase account management (docs/protocol.md).
struct AccountResponder: Sendable {
    let management: any AccountManagementService
    /// For `upgrade` with Google, a browser sign-in streamed like a login.
    let signIn: any SignInService

    func handle(_ args: AccountArgs, id: RequestID?) async throws(TokendError) -> RequestRouter.Reply {
        let name = args.account
        var response = Response(id: id)
        response.account = name
        switch args.action {
        case .show(let timeout):
            let (user, claims) = try await management.showUser(account: name, timeout: timeout).get()
            response.user = Self.profile(user, claims)
        case .verifyEmail(let timeout):
            response.email = try await management.sendVerificationEmail(account: name, timeout: timeout).get()
        case .resetPassword(let email):
            response.email = try await management.sendPasswordReset(account: name, email: email).get()
        case .upgradeWithEmail(let email, let password, let timeout):
            let summary = try await management.upgrade(account: name, email: email, password: password, timeout: timeout).get()
            response.describeSession(account: name, expiresAt: summary.expiresAt, now: management.clock.now())
            response.signInProvider = summary.signInProvider
            response.replacedOtherUser = summary.replacedOtherUser ? true : nil
        case .upgradeWithIdentityProvider(let identityProvider, let device, let timeout):
            return .stream(SignInStream.make(id: id, account: name, clock: signIn.clock) { [signIn] progress in
                await signIn.upgradeWithIdentityProvider(account: name, identityProvider, device: device, timeout: timeout, progress: progress)
            })
        case .delete(let confirmed, let timeout):
            guard confirmed else { throw TokendError(.badRequest, try await management.describeDeletion(account: name).get()) }
            try await management.deleteUser(account: name, timeout: timeout).get()
        case .startSecondFactorEnrollment(let timeout):
            response.enrollment = try await management.startSecondFactorEnrollment(account: name, timeout: timeout).get()
        case .finishSecondFactorEnrollment(let handle, let code, let displayName, let timeout):
            let summary = try await management.finishSecondFactorEnrollment(account: name, handle: handle, code: code, displayName: displayName, timeout: timeout).get()
            response.describeSession(account: name, expiresAt: summary.expiresAt, now: management.clock.now())
        case .removeSecondFactor(let factor, let timeout):
            let summary = try await management.removeSecondFactor(account: name, factor: factor, timeout: timeout).get()
            response.describeSession(account: name, expiresAt: summary.expiresAt, now: management.clock.now())
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
        profile.tenant = claims?.tenant
        profile.authTime = claims?.authTime.map(Timestamp.format)
        profile.createdAt = user.createdAt.map(Timestamp.format)
        profile.lastLoginAt = user.lastLoginAt.map(Timestamp.format)
        profile.disabled = user.disabled
        profile.factors = user.factors.isEmpty ? nil : user.factors
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
