/// Which of an account's tokens a caller wants.
public enum TokenKind: String, Codable, Sendable, CaseIterable {
    /// The OpenID Connect / Firebase ID token: who the user is.
    case id
    /// The OAuth access token: what the bearer may do. Firebase hands out its ID token here too.
    case access
}

/// The kind of identity provider behind an account (DESIGN.md §2).
public enum ProviderKind: String, Codable, Sendable {
    case firebase
    case oidc

    /// What `tokenctl token` prints when no `--kind` is given (DESIGN.md §6).
    public var defaultTokenKind: TokenKind {
        switch self {
        case .firebase: .id
        case .oidc: .access
        }
    }
}
