import TokendCore
import TokendProtocol
import TokendProviders

// The engine as the responders see it. Most requirements are the engine's own methods; these
// adapt the few whose signatures differ.
extension AccountEngine: SessionService, StatusService, SignInService, AccountManagementService {
    public func token(account: String, kind: TokenKind?, minValid: Double, timeout: Double, scope: TokenScope?) async -> Result<TokenGrant, TokendError> {
        guard let scope else { return await token(account: account, kind: kind, minValid: minValid, timeout: timeout) }
        return await token(account: account, kind: kind, scope: scope, minValid: minValid, timeout: timeout)
    }

    public nonisolated func heldToken(account: String, kind: TokenKind?, minValid: Double) -> TokenGrant? {
        heldTokens.grant(account: account, kind: kind, minValid: minValid, at: clock.now())
    }

    public func login(
        account: String, request: LoginRequest, progress: @escaping @Sendable (LoginStep) -> Void
    ) async -> Result<LoginSummary, TokendError> {
        await login(account: account, request, progress: progress)
    }
}
