import Foundation
import TokendProviders

/// The fake's accounts and refresh tokens, and the rules that decide what a refresh answers.
/// Pure state: the backend holds it under its lock and supplies the options and the time.
struct Ledger: Sendable {
    struct User: Sendable {
        var uid: String
        var email: String?
        var password: String?
        var disabled = false
        var emailVerified = false
        /// Federated identities linked to this user: provider id → the provider's user id.
        var federated: [String: String] = [:]
        /// Enrolled second factors: sign-ins answer `mfaPendingCredential` and `mfaInfo`.
        var factors: [Factor] = []
        /// Seconds since 1970 before which ID tokens are void and after which only newer refresh
        /// tokens work: moved by a password change and by `revokeTokens` (the emulator's
        /// `validSince`, operations.ts `parseIdToken`; production also revokes refresh tokens).
        var validSince: Int64 = 0
        /// The Identity Platform tenant the user lives in; nil for the project's own users.
        var tenant: String?
        /// Milliseconds since 1970, as `accounts:lookup` reports them.
        var createdAt: Int64 = 0
        var lastLoginAt: Int64 = 0

        /// `providerUserInfo` of `accounts:lookup`: one entry per linked sign-in method.
        var providers: [String] {
            var providers: [String] = []
            if password != nil { providers.append("password") }
            providers += federated.keys.sorted()
            return providers
        }
    }

    /// An enrolled second factor (`mfaInfo`).
    struct Factor: Sendable {
        enum Kind: Sendable {
            /// The shared secret's bytes (base32 on the wire).
            case totp(secret: [UInt8])
            /// The masked number as Firebase lists it.
            case phone(String)
        }
        var id: String
        var displayName: String?
        var kind: Kind
        var enrolledAt: Date
    }

    /// A sign-in waiting for its second factor (`mfaPendingCredential`).
    struct PendingSignIn: Sendable {
        var uid: String
        var provider: String
        var tenant: String?
        var expiresAt: Date
    }

    /// A TOTP enrollment between `start` and `finalize` (`sessionInfo`).
    struct EnrollmentSession: Sendable {
        var uid: String
        var secret: [UInt8]
        var expiresAt: Date
    }

    var pendingSignIns: [String: PendingSignIn] = [:]
    var enrollmentSessions: [String: EnrollmentSession] = [:]

    /// What a refresh token is good for.
    enum GrantState: Sendable, Equatable {
        case live
        /// Replaced under `revokePrevious` rotation: answers `INVALID_REFRESH_TOKEN`.
        case superseded
        /// Cut off by `revokeTokens`: answers `TOKEN_EXPIRED`, as production does.
        case revoked
    }

    /// One refresh token: the sign-in it continues and whether it still works.
    struct Grant: Sendable {
        var subject: IDTokenMinter.Subject
        var state: GrantState
    }

    /// A sign-in or refresh that succeeded.
    struct Minted: Sendable, Equatable {
        var uid: String
        var email: String?
        var refreshToken: String
        var idToken: String
        var expiresAt: Date
        var lifetime: Int

        var session: FakeFirebase.Session {
            FakeFirebase.Session(uid: uid, refreshToken: refreshToken, idToken: idToken, expiresAt: expiresAt)
        }
    }

    private(set) var users: [String: User] = [:]
    private var grants: [String: Grant] = [:]
    /// Survives `deleteUser`, so a test can still ask which token the deleted user last held.
    private var newest: [String: String] = [:]

    func newestRefreshToken(uid: String) -> String? { newest[uid] }

    /// The tenant of the Identity Toolkit request being answered (its `tenantId`), nil outside
    /// one: each tenant is a user namespace of its own (the emulator's `TenantProjectState`).
    var tenant: String?

    func user(withEmail email: String) -> User? {
        users.values.first { $0.tenant == tenant && $0.email?.lowercased() == email.lowercased() }
    }

    /// Adds a user; the caller has checked that the email is free.
    mutating func addUser(email: String?, password: String?, uid: String = FakeIdentifiers.uid(), now: Date) -> User {
        var user = User(uid: uid, email: email, password: password)
        user.tenant = tenant
        user.createdAt = Int64(saturating: now.timeIntervalSince1970 * 1000)
        users[uid] = user
        return user
    }

    /// A new session for an existing user: a fresh refresh token and ID token, `auth_time` now.
    mutating func signIn(uid: String, provider: String, secondFactor: (kind: String, id: String)? = nil, now: Date, options: FakeFirebase.Options) -> Minted {
        var subject = IDTokenMinter.Subject(
            uid: uid, email: users[uid]?.email, provider: provider,
            authTime: Int(saturating: now.timeIntervalSince1970.rounded(.down)))
        subject.secondFactor = secondFactor?.kind
        subject.secondFactorIdentifier = secondFactor?.id
        if let user = users[uid] {
            subject.tenant = user.tenant
            subject.emailVerified = user.emailVerified
            for (provider, rawID) in user.federated { subject.identities[provider] = [rawID] }
        }
        users[uid]?.lastLoginAt = Int64(saturating: now.timeIntervalSince1970 * 1000)
        return issue(for: subject, now: now, options: options)
    }

    /// Changes a user in place (upgrade, verification, second factor).
    mutating func change(_ uid: String, _ body: (inout User) -> Void) -> Bool {
        guard users[uid] != nil else { return false }
        body(&users[uid]!)
        return true
    }

    func user(linkedTo provider: String, rawID: String) -> User? {
        users.values.first { $0.federated[provider] == rawID }
    }

    /// What the Secure Token API does with a presented refresh token.
    mutating func refresh(_ presented: String, now: Date, options: FakeFirebase.Options) -> Result<Minted, FirebaseRejection> {
        guard let grant = grants[presented], grant.state != .superseded else {
            if options.revokeFamilyOnReuse, let reused = grants[presented] {
                // Reuse of a rotated-away token: the family goes (`Options.revokeFamilyOnReuse`).
                for (token, other) in grants where other.subject.uid == reused.subject.uid && other.state == .live { grants[token]?.state = .revoked }
            }
            return .failure(.firebase("INVALID_REFRESH_TOKEN"))
        }
        guard let user = users[grant.subject.uid] else { return .failure(.firebase("USER_NOT_FOUND")) }
        if user.disabled { return .failure(.firebase("USER_DISABLED")) }
        if grant.state == .revoked { return .failure(.firebase("TOKEN_EXPIRED")) }

        var subject = grant.subject
        subject.email = user.email
        subject.emailVerified = user.emailVerified
        guard options.rotate else {
            let (idToken, expiresAt) = IDTokenMinter.mint(
                for: subject, issuedAt: now, lifetime: options.lifetime, projectID: options.projectID)
            return .success(Minted(
                uid: user.uid, email: user.email, refreshToken: presented, idToken: idToken, expiresAt: expiresAt,
                lifetime: options.lifetime))
        }
        if options.revokePrevious { grants[presented]?.state = .superseded }
        return .success(issue(for: subject, now: now, options: options))
    }

    /// The uid a refresh token belongs to, if the fake ever issued it.
    func uid(of refreshToken: String) -> String? { grants[refreshToken]?.subject.uid }

    mutating func disable(_ uid: String) -> Bool {
        guard users[uid] != nil else { return false }
        users[uid]?.disabled = true
        return true
    }

    mutating func delete(_ uid: String) -> Bool {
        users.removeValue(forKey: uid) != nil
    }

    /// Every refresh token of the user so far answers `TOKEN_EXPIRED`, and every ID token
    /// issued before `now`'s second is void: a password change or the Admin SDK's
    /// `revokeRefreshTokens`.
    mutating func revokeTokens(of uid: String, now: Date) -> Bool {
        guard users[uid] != nil else { return false }
        users[uid]?.validSince = Int64(saturating: now.timeIntervalSince1970.rounded(.down))
        for (token, grant) in grants where grant.subject.uid == uid && grant.state == .live {
            grants[token]?.state = .revoked
        }
        return true
    }

    private mutating func issue(for subject: IDTokenMinter.Subject, now: Date, options: FakeFirebase.Options) -> Minted {
        let refreshToken = OIDCProvider.randomToken()
        grants[refreshToken] = Grant(subject: subject, state: .live)
        newest[subject.uid] = refreshToken
        let (idToken, expiresAt) = IDTokenMinter.mint(
            for: subject, issuedAt: now, lifetime: options.lifetime, projectID: options.projectID)
        return Minted(
            uid: subject.uid, email: subject.email, refreshToken: refreshToken, idToken: idToken, expiresAt: expiresAt,
            lifetime: options.lifetime)
    }
}
