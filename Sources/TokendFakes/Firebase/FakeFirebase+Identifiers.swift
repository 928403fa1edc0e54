import Foundation

/// Random identifiers the fake hands out; refresh tokens and `jti`s are the providers'
/// `OIDCProvider.randomToken()` (32 random bytes, 43 base64url characters: past the 40 clients
/// may assume of a real refresh token, and every minted ID token distinct).
enum FakeIdentifiers {
    /// Firebase uids are 28 alphanumeric characters; matching that keeps clients' assumptions true.
    static let uidLength = 28

    private static let uidAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")

    /// A uid, or (with `length`) the stand-ins' codes and tokens: letters and digits.
    static func uid(length: Int = uidLength) -> String {
        var generator = SystemRandomNumberGenerator()
        return String((0..<length).map { _ in uidAlphabet.randomElement(using: &generator)! })
    }
}
