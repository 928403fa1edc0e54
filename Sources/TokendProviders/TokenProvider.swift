import TokendCore

/// An identity provider: turns a refresh token into fresh tokens, and, where it can, signs a
/// user in and revokes a session. Implementations classify every answer; they never log a token.
public protocol TokenProvider: Sendable {
    var kind: ProviderKind { get }
    func refresh(refreshToken: String) async -> RefreshOutcome
    /// Mints an access token narrowed to `scope` with the same refresh token (a refresh grant
    /// carrying `scope` and an audience). Its answer may rotate the refresh token like a refresh.
    func refresh(refreshToken: String, narrowedTo scope: TokenScope) async -> RefreshOutcome
    /// Runs one sign-in flow. The stream ends after `.done`, or throws a `LoginFailure`.
    func login(_ request: LoginRequest) -> AsyncThrowingStream<LoginStep, any Error>
    /// Revokes a refresh token at the provider (on logout, and after a login replaced it).
    func revoke(refreshToken: String) async -> RevocationOutcome
}

extension TokenProvider {
    public func login(_ request: LoginRequest) -> AsyncThrowingStream<LoginStep, any Error> {
        AsyncThrowingStream { continuation in
            continuation.finish(throwing: LoginFailure(
                .badRequest, code: "unsupported_method",
                message: "\(kind.rawValue) accounts cannot sign in with --\(request.method.rawValue) in this version"))
        }
    }

    public func refresh(refreshToken: String, narrowedTo scope: TokenScope) async -> RefreshOutcome {
        .misconfigured(RefreshFailure(code: "unsupported", message: "\(kind.rawValue) accounts cannot mint tokens for a scope or an audience"))
    }

    public func revoke(refreshToken: String) async -> RevocationOutcome {
        .unsupported("\(kind.rawValue) sessions cannot be revoked from a client")
    }
}
