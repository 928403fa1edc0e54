import Testing
@testable import TokendCore

@Suite struct TokenSetTests {
    @Test func keyringJSONRoundTripsAndUsesSnakeCase() throws {
        let tokens = TokenSet(refreshToken: "r", idToken: "i", idTokenExpiresAt: Date(timeIntervalSince1970: 100), accessToken: "a",
            accessTokenExpiresAt: Date(timeIntervalSince1970: 200), issuedAt: Date(timeIntervalSince1970: 50))
        let json = try tokens.keyringJSON()
        #expect(json.contains(#""refresh_token":"r""#))
        #expect(json.contains(#""expires_at":200"#))
        #expect(try TokenSet(keyringJSON: json) == tokens)
    }

    @Test func descriptionNeverShowsATokenCanary() {
        let canary = "CANARY-8c1f2e"
        let tokens = TokenSet(refreshToken: canary, idToken: canary, idTokenExpiresAt: Date(), accessToken: canary, accessTokenExpiresAt: Date())
        #expect(!"\(tokens)".contains(canary))
        #expect(!String(reflecting: tokens).contains(canary))
    }

    @Test func jwtClaimsDecode() {
        let header = JWTClaims.base64URLEncode(Data(#"{"alg":"none"}"#.utf8))
        let payload = JWTClaims.base64URLEncode(Data(#"{"exp":1800003600,"iat":1800000000,"sub":"u1","email":"a@b.c"}"#.utf8))
        let claims = JWTClaims(token: "\(header).\(payload).")
        #expect(claims?.expiresAt == Date(timeIntervalSince1970: 1_800_003_600))
        #expect(claims?.subject == "u1")
        #expect(JWTClaims(token: "opaque-token") == nil)
    }

    func jwt(_ payload: String) -> String {
        "e30.\(JWTClaims.base64URLEncode(Data(payload.utf8)))."
    }

    @Test func expiryIsTheShorterLifetimeCountedFromReceipt() {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        // The provider's clock is an hour behind ours: its exp is in our past, its lifetime is not.
        let skewed = jwt(#"{"iat":1799996400,"exp":1800000000}"#)
        let sent = now.addingTimeInterval(-2)
        let merged = TokenSet(refreshToken: "r").merging(IssuedTokens(idToken: skewed, accessToken: skewed, expiresIn: 3600), sentAt: sent, at: now)
        #expect(merged.idTokenExpiresAt == sent.addingTimeInterval(3600 - TokenSet.lifetimeGranularity), "counted from sending, less a second")
        // A cached token: expires_in says 600 s are left although the JWT lived for an hour.
        let cached = TokenSet(refreshToken: "r").merging(IssuedTokens(accessToken: skewed, expiresIn: 600), sentAt: now, at: now)
        #expect(cached.accessTokenExpiresAt == now.addingTimeInterval(599))
    }

    @Test func withoutALifetimeTheAbsoluteExpIsUsed() {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let merged = TokenSet(refreshToken: "r").merging(IssuedTokens(idToken: jwt(#"{"exp":1800000100}"#)), sentAt: now, at: now)
        #expect(merged.idTokenExpiresAt == Date(timeIntervalSince1970: 1_800_000_100))
    }

    /// Issue 8, item 2: any program in the session can write the item; an instant no real token
    /// has is corrupt, not a trap later in formatting or arithmetic.
    @Test(arguments: ["1e300", "9007199254740993", "-1", "253402300800"])
    func anAbsurdStoredInstantIsUnreadable(_ value: String) {
        #expect(throws: (any Error).self) { try TokenSet(keyringJSON: #"{"refresh_token":"r","expires_at":\#(value)}"#) }
        #expect(throws: (any Error).self) { try TokenSet(keyringJSON: #"{"refresh_token":"r","issued_at":\#(value)}"#) }
    }

    @Test func saturatingConversionNeverTraps() {
        #expect(Int(saturating: 1e300) == .max)
        #expect(Int(saturating: -1e300) == .min)
        #expect(Int(saturating: .nan) == 0)
        #expect(Int(saturating: 12.9) == 12)
    }
}
