import Foundation
import TokendCore

/// Token sets and account names for the keyring tests: unique per call, so tests sharing one
/// keyring never see each other's items.
enum TestTokens {
    static func account(_ tag: String) -> String {
        "\(tag)-\(UUID().uuidString.prefix(8).lowercased())"
    }

    /// Whole seconds: the keyring JSON stores dates that way.
    static func tokens(_ tag: String, size: Int = 0) -> TokenSet {
        let filler = size > 0 ? String(repeating: "x", count: size) : ""
        return TokenSet(
            refreshToken: "refresh-\(tag)-\(UUID().uuidString)\(filler)",
            idToken: "id-\(tag)-\(UUID().uuidString)\(filler)",
            idTokenExpiresAt: Date(timeIntervalSince1970: 2_000_003_600),
            accessToken: "access-\(tag)-\(UUID().uuidString)",
            accessTokenExpiresAt: Date(timeIntervalSince1970: 2_000_001_800),
            issuedAt: Date(timeIntervalSince1970: 2_000_000_000))
    }
}

extension Result {
    var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }

    var success: Success? {
        if case .success(let value) = self { return value }
        return nil
    }
}

/// Polls `attempt` until it returns non-nil or `seconds` pass: for conditions another process
/// makes true in its own time. Not for synchronisation within this process.
func eventually<T>(within seconds: Double = 10, _ attempt: () async -> T?) async -> T? {
    let deadline = ContinuousClock.now + .seconds(seconds)
    while true {
        if let value = await attempt() { return value }
        if ContinuousClock.now >= deadline { return nil }
        // Often enough not to slow the tests, rarely enough not to load two shared cores.
        try? await Task.sleep(for: .milliseconds(50))
    }
}
