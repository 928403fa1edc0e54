import Testing

@testable import TokenctlKit

@Suite("import: reading stdin")
struct ImportInputTests {
    func parse(_ text: String) throws(TokenctlError) -> ImportInput { try ImportInput.parse(Array(text.utf8)) }

    @Test func bareToken() throws {
        #expect(try parse("AMf-vBx1\n") == ImportInput(refreshToken: "AMf-vBx1"))
        #expect(try parse("AMf-vBx1") == ImportInput(refreshToken: "AMf-vBx1"))
    }

    @Test func blankLinesAndSpacesAreSkipped() throws {
        #expect(try parse("\n\n   \n  AMf-vBx1  \r\nsecond line\n") == ImportInput(refreshToken: "AMf-vBx1"))
    }

    @Test func jsonTokenSet() throws {
        let input = """

              {"refresh_token": "r1", "id_token": "i1", "access_token": "a1",
               "expires_at": "2025-03-01T12:00:00Z", "token_type": "Bearer"}
            """
        #expect(
            try parse(input)
                == ImportInput(refreshToken: "r1", idToken: "i1", accessToken: "a1", expiresAt: "2025-03-01T12:00:00Z"))
    }

    @Test func jsonWithOnlyARefreshToken() throws {
        #expect(try parse(#"{"refresh_token":"r1"}"#) == ImportInput(refreshToken: "r1"))
    }

    @Test func jsonExpiryInEpochSeconds() throws {
        #expect(try parse(#"{"refresh_token":"r1","expires_at":1740830400}"#).expiresAt == "2025-03-01T12:00:00Z")
    }

    @Test(arguments: ["", "\n", "  \n\t\n", "\u{FEFF}\n"])
    func emptyInputIsAUsageError(_ input: String) {
        do {
            _ = try parse(input)
            Issue.record("accepted empty input")
        } catch {
            #expect(error.code == .usage)
            #expect(error.code.exitCode == 64)
        }
    }

    @Test(arguments: [
        #"{"id_token":"SECRET-i"}"#,  // no refresh token
        #"{"refresh_token":""}"#,
        #"{"refresh_token":"SECRET-r""#,  // cut off
        #"{"refresh_token":42}"#,
        #"{"refresh_token":"SECRET-r","expires_at":"tomorrow"}"#,
        #"{"refresh_token":"SECRET-r","expires_at":1e300}"#,  // issue 8, item 2: trapped
        #"{"refresh_token":"SECRET-r","expires_at":-5}"#,
        #"{"refresh_token":"SECRET-r"} trailing"#,
    ])
    func badJSONIsAUsageErrorThatNeverEchoesTheInput(_ input: String) {
        do {
            _ = try parse(input)
            Issue.record("accepted \(input)")
        } catch {
            #expect(error.code == .usage)
            #expect(!error.line.contains("SECRET"))
            #expect(!error.line.contains("\n"))
        }
    }

    @Test func tooMuchInput() {
        let huge = String(repeating: "x", count: ImportInput.maximumLength + 1)
        #expect(throws: TokenctlError.self) { try parse(huge) }
    }

    @Test func notUTF8() {
        #expect(throws: TokenctlError.self) { try ImportInput.parse([0x66, 0xFF, 0xFE]) }
    }
}
