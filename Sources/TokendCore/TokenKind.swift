/// Which of an account's tokens a caller wants.
public enum TokenKind: String, Codable, Sendable, CaseIterable {
    /// The OpenID Connect / Firebase ID token: who the user is.
    case id
    /// The OAuth access token: what the bearer may do. Firebase hands out its ID token here too.
    case access
}

/// The name of a kind of identity provider (`provider = "…"` in an account table). Open: each
/// provider declares its own (`ProviderKind.firebase` lives with the Firebase provider).
public struct ProviderKind: RawRepresentable, Hashable, Codable, Sendable, CustomStringConvertible {
    public let rawValue: String

    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    public var description: String { rawValue }
}
