import TokendCore
import TokendProtocol

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
    /// Starts a TOTP enrollment: the secret for the authenticator app and the handle that
    /// finishes it.
    func startTOTPEnrollment(idToken: String) async -> Result<SecondFactorEnrollment, LoginFailure>
    /// Finishes the enrollment behind `handle` with a code, naming the factor `displayName`;
    /// returns the new session.
    func finishTOTPEnrollment(idToken: String, handle: String, code: String, displayName: String) async -> Result<SignedIn, LoginFailure>
    /// Withdraws a second factor; returns the new session, or a failure with `sessionEnded`
    /// when Firebase ended the session instead (the newest factor withdrawn).
    func withdrawSecondFactor(idToken: String, enrollmentID: String) async -> Result<SignedIn, LoginFailure>
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
    /// Enrolled second factors (`mfaInfo`).
    public var factors: [SecondFactor] = []

    public init(uid: String, providers: [String] = []) {
        self.uid = uid
        self.providers = providers
    }
}
