import TokendCore

/// A provider whose users can be managed from the client (Firebase): profile, verification and
/// password-reset emails, upgrading an anonymous user, deleting the user. Every call takes the
/// session's current ID token; failures are `LoginFailure`s with a next step.
public protocol AccountManaging: Sendable {
    func lookup(idToken: String) async -> Result<ManagedUser, LoginFailure>
    /// Sends the verification email to the user's address; returns that address.
    func sendVerificationEmail(idToken: String) async -> Result<String, LoginFailure>
    /// Sends a password-reset email; needs no session.
    func sendPasswordReset(email: String) async -> Result<Void, LoginFailure>
    /// Gives an anonymous user an email and password, keeping its uid; returns the new session.
    func upgrade(idToken: String, email: String, password: String) async -> Result<SignedIn, LoginFailure>
    func deleteUser(idToken: String) async -> Result<Void, LoginFailure>
}

/// A user as the provider describes it (`accounts:lookup`).
public struct ManagedUser: Sendable, Equatable {
    public var uid: String
    public var email: String?
    public var emailVerified: Bool?
    public var displayName: String?
    /// Linked sign-in methods (`password`, `google.com`, …).
    public var providers: [String]
    public var createdAt: Date?
    public var lastLoginAt: Date?
    public var disabled: Bool?

    public init(uid: String, providers: [String] = []) {
        self.uid = uid
        self.providers = providers
    }
}
