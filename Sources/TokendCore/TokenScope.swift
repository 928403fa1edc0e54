/// What a down-scoped access token is asked for: a subset of the session's granted scopes
/// (RFC 6749 §6) and an audience (RFC 8707 `resource`, or a provider's own `audience`). The key of
/// `ScopedTokenCache`: one token per distinct pair, whatever order or repetition the scopes came in.
public struct TokenScope: Hashable, Sendable, CustomStringConvertible {
    /// Sorted and without repeats; empty means "the grant's own scopes" (only an audience asked).
    public let scopes: [String]
    public let audience: String?

    /// Longest `scope` string or `audience` accepted: far beyond any real scope list or URI,
    /// small enough that a request cannot make the daemon hold or send megabytes.
    public static let maximumLength = 4096

    /// Nil when neither is asked (the account's own token). `scope` is space-separated, as OAuth
    /// writes it; repeated spaces are ignored.
    public init?(scope: String?, audience: String?) throws(TokendError) {
        guard (scope?.utf8.count ?? 0) <= Self.maximumLength, (audience?.utf8.count ?? 0) <= Self.maximumLength else {
            throw TokendError(.badRequest, "fields \"scope\" and \"audience\" may be at most \(Self.maximumLength) bytes each")
        }
        let words = (scope ?? "").split(separator: " ").map(String.init)
        let audience = audience.flatMap { $0.isEmpty ? nil : $0 }
        guard !words.isEmpty || audience != nil else { return nil }
        // A scope token is printable ASCII without space, quote or backslash (RFC 6749 §3.3).
        func isScopeCharacter(_ byte: UInt8) -> Bool { byte == 0x21 || (0x23...0x5B).contains(byte) || (0x5D...0x7E).contains(byte) }
        guard words.allSatisfy({ $0.utf8.allSatisfy(isScopeCharacter) }) else {
            throw TokendError(.badRequest, "field \"scope\" must be scope names separated by spaces (printable ASCII, no quotes or backslashes)")
        }
        guard audience?.utf8.allSatisfy({ $0 > 0x20 && $0 != 0x7F }) != false else {
            throw TokendError(.badRequest, "field \"audience\" must be one URI or name, without spaces or control characters")
        }
        self.init(scopes: words, audience: audience)
    }

    public init(scopes: [String], audience: String? = nil) {
        self.scopes = Array(Set(scopes)).sorted()
        self.audience = audience
    }

    /// The scopes asked for that `granted` does not hold; empty when the request fits the grant.
    public func notGranted(by granted: [String]) -> [String] {
        let held = Set(granted)
        return scopes.filter { !held.contains($0) }
    }

    /// The `scope` form value, as OAuth writes it.
    public var scopeParameter: String? { scopes.isEmpty ? nil : scopes.joined(separator: " ") }

    /// Scopes and audience are not secrets: safe in log lines and messages.
    public var description: String {
        "scope \"\(scopes.joined(separator: " "))\"" + (audience.map { ", audience \"\($0)\"" } ?? "")
    }
}
