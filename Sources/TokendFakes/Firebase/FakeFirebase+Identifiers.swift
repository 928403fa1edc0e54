import Foundation
import TokendCore

/// Random identifiers the fake hands out.
enum FakeIdentifiers {
    /// 32 random bytes, 43 base64url characters: 256 bits nobody guesses, and past the 40
    /// characters clients may assume of a real refresh token (production's are far longer).
    static let refreshTokenBytes = 32
    /// Firebase uids are 28 alphanumeric characters; matching that keeps clients' assumptions true.
    static let uidLength = 28
    /// 16 bytes of `jti` make every minted ID token distinct, even two in the same second.
    static let nonceBytes = 16

    private static let uidAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")

    static func refreshToken() -> String {
        JWTClaims.base64URLEncode(randomData(count: refreshTokenBytes))
    }

    static func uid() -> String {
        var generator = SystemRandomNumberGenerator()
        return String((0..<uidLength).map { _ in uidAlphabet.randomElement(using: &generator)! })
    }

    static func nonce() -> String {
        JWTClaims.base64URLEncode(randomData(count: nonceBytes))
    }

    private static func randomData(count: Int) -> Data {
        var generator = SystemRandomNumberGenerator()
        return Data((0..<count).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
    }
}
