import TokendCore

/// An identity provider that can turn a refresh token into fresh tokens.
/// Implementations classify every answer; they never throw and never log a token.
public protocol TokenProvider: Sendable {
    var kind: ProviderKind { get }
    func refresh(refreshToken: String) async -> RefreshOutcome
}
