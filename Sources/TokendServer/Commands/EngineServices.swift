import TokendCore
import TokendProtocol
import TokendProviders

// Commands/ — what the responders may ask of the engine, and no more: the service protocols below,
// which `AccountCommands` conforms to (Engine/UserActions/AccountCommands.swift), so the responders' tests run
// against a stub instead of an engine, a keyring and an HTTP fake. The ops themselves, decoded and
// checked (`Command`), are the protocol's: Sources/TokendProtocol/Command.swift.

/// `token`, `refresh`, `import`, `logout`: the account's session.
public protocol SessionService: Sendable {
    /// The engine's clock: `expires_in` is counted from its now.
    var clock: any WallClock { get }
    /// `scope` nil: the account's own token; else one narrowed to it.
    func token(account: String, kind: TokenKind?, scope: TokenScope?, minValid: Double, timeout: Double) async -> Result<TokenGrant, TokendError>
    /// The account's own token if one is held that meets `minValid` now, without waiting on
    /// anything: the event loop's fast path. Nil: ask `token`, which decides the rest.
    func heldToken(account: String, kind: TokenKind?, minValid: Double) -> TokenGrant?
    /// The new token's expiry, if the provider said.
    func refresh(account: String, timeout: Double) async -> Result<Date?, TokendError>
    func install(account: String, tokens: TokenSet, timeout: Double) async -> Result<Date?, TokendError>
    func logout(account: String) async -> Result<LogoutOutcome, TokendError>
}

extension SessionService {
    /// A service with no fast path sends every request the slow way.
    public func heldToken(account: String, kind: TokenKind?, minValid: Double) -> TokenGrant? { nil }
}

/// `list`, `status`, `watch`: what the accounts are and how they do.
public protocol StatusService: Sendable {
    func statuses(account: String?) async -> Result<[AccountReport], TokendError>
    var accountNames: [String] { get async }
}

/// `login`, and `account` `upgrade` with an identity provider: sign-ins whose steps are streamed.
public protocol SignInService: Sendable {
    var clock: any WallClock { get }
    func login(account: String, request: LoginRequest, progress: @escaping @Sendable (LoginStep) -> Void) async -> Result<LoginSummary, TokendError>
    func upgradeWithIdentityProvider(
        account: String, _ identityProvider: String, device: Bool, timeout: Double, progress: @escaping @Sendable (LoginStep) -> Void
    ) async -> Result<LoginSummary, TokendError>
}

/// `account`: Firebase account management with the session the engine holds.
public protocol AccountManagementService: Sendable {
    var clock: any WallClock { get }
    func showUser(account: String, timeout: Double) async -> Result<(ManagedUser, FirebaseClaims?), TokendError>
    /// Where the email went.
    func sendVerificationEmail(account: String, timeout: Double) async -> Result<String, TokendError>
    func sendPasswordReset(account: String, email: String?) async -> Result<String, TokendError>
    func upgrade(account: String, email: String, password: String, timeout: Double) async -> Result<LoginSummary, TokendError>
    /// What `delete` would delete, in words (the answer to a `delete` without `confirm`).
    func describeDeletion(account: String) async -> Result<String, TokendError>
    func deleteUser(account: String, timeout: Double) async -> Result<Void, TokendError>
    /// A TOTP enrollment's first step: the secret and the handle that finishes it.
    func startSecondFactorEnrollment(account: String, timeout: Double) async -> Result<SecondFactorEnrollment, TokendError>
    /// Its second step: the session replaced by the one Firebase issued with the factor.
    /// `displayName` nil: `tokend on HOST`.
    func finishSecondFactorEnrollment(account: String, handle: String, code: String, displayName: String?, timeout: Double) async -> Result<LoginSummary, TokendError>
    func removeSecondFactor(account: String, factor: String, timeout: Double) async -> Result<LoginSummary, TokendError>
}

/// `store`: where each account's session is kept.
public protocol StoreService: Sendable {
    /// Moves the account's session to `store`, nothing lost (AccountEngine+StoreMove.swift).
    func moveStore(account: String, to store: StoreKind) async -> Result<StoreMoveOutcome, TokendError>
}

/// Everything the request router dispatches to.
public typealias EngineServices = SessionService & StatusService & SignInService & AccountManagementService & StoreService
