import TokendCore

/// An identity provider: turns a refresh token into fresh tokens, and, where it can, signs a
/// user in and revokes a session. Implementations classify every answer; they never log a token.
public protocol TokenProvider: Sendable {
    var kind: ProviderKind { get }
    func refresh(refreshToken: String) async -> RefreshOutcome
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

    public func revoke(refreshToken: String) async -> RevocationOutcome {
        .unsupported("\(kind.rawValue) sessions cannot be revoked from a client")
    }
}
