import ArgumentParser
import Testing
import TokendCore
import TokendProtocol

@testable import TokenctlKit

/// `token`'s hand parser must accept only what ArgumentParser accepts, with the same result.
@Suite("token fast path")
struct FastPathTests {
    @Test(arguments: [
        ["token", "work"],
        ["token", "work", "--socket", "/tmp/s", "--timeout", "5", "--kind", "id", "--min-valid", "60"],
        ["token", "work", "--kind=access", "--min-valid=0", "--timeout=0.25", "--socket=/run/t.sock"],
        ["token", "work", "--min-valid", "1e3"],
        ["token", "ünïcode-account"],
        ["token", "work", "--scope", "read:x write:y", "--audience", "https://api.example.com"],
        ["token", "work", "--scope=read:x", "--audience=https://api.example.com", "--kind", "access"],
    ])
    func takesTheFastPathAndAgreesWithArgumentParser(_ arguments: [String]) throws {
        let fast = try #require(Tokenctl.Token.parseFast(arguments))
        let full = try #require(try Tokenctl.parseAsRoot(arguments) as? Tokenctl.Token)
        #expect(fast.token.account == full.token.account)
        #expect(fast.token.minValid == full.token.minValid)
        #expect(fast.token.kind == full.token.kind)
        #expect(fast.token.scope == full.token.scope && fast.token.audience == full.token.audience)
        #expect(fast.token.connection.socket == full.token.connection.socket)
        #expect(fast.token.connection.timeout == full.token.connection.timeout)
        // header takes the same options through the same parser.
        let header = ["header"] + arguments.dropFirst()
        let fastHeader = try #require(Tokenctl.Header.parseFast(header))
        let fullHeader = try #require(try Tokenctl.parseAsRoot(header) as? Tokenctl.Header)
        #expect(fastHeader.token.account == fullHeader.token.account)
        #expect(fastHeader.token.minValid == fullHeader.token.minValid)
        #expect(fastHeader.token.scope == fullHeader.token.scope && fastHeader.token.audience == fullHeader.token.audience)
        #expect(fastHeader.token.connection.socket == fullHeader.token.connection.socket)
    }

    @Test(arguments: [
        ["exec", "work", "--", "env"],
        ["exec", "work", "--min-valid", "600", "--kind=id", "--", "sh", "-c", "exit 3", "--min-valid", "--"],
        ["exec", "work", "--scope", "read:x", "--", "env"],
    ])
    func execTakesTheFastPathAndAgreesWithArgumentParser(_ arguments: [String]) throws {
        let fast = try #require(Tokenctl.Exec.parseFast(arguments))
        let full = try #require(try Tokenctl.parseAsRoot(arguments) as? Tokenctl.Exec)
        #expect(fast.token.account == full.token.account)
        #expect(fast.token.minValid == full.token.minValid)
        #expect(fast.token.kind == full.token.kind)
        #expect(fast.token.scope == full.token.scope)
        #expect(fast.command == full.command)
        #expect(fast.command == Array(arguments.drop { $0 != "--" }.dropFirst()))
    }

    @Test(arguments: [["exec", "work"], ["exec", "work", "--"], ["exec", "work", "env"], ["exec", "--", "env"], ["token", "work", "--", "env"]])
    func execWithoutACommandOrTokenWithOneIsForArgumentParser(_ arguments: [String]) {
        #expect(Tokenctl.Exec.parseFast(arguments) == nil)
        #expect(Tokenctl.Token.parseFast(arguments) == nil)
        #expect(throws: (any Error).self) { try Tokenctl.parseAsRoot(arguments) }
    }

    @Test(arguments: [
        ["token"], ["token", "--help"], ["token", "work", "-h"], ["token", "work", "--help"], ["token", ""],
        ["token", "work", "extra"], ["token", "work", "--kind", "bad"], ["token", "work", "--kind"],
        ["token", "work", "--min-valid=-5"], ["token", "work", "--min-valid", "-5"], ["token", "work", "--min-valid", "soon"],
        ["token", "work", "--timeout", "0"], ["token", "work", "--timeout", "inf"], ["token", "work", "--kind", "id", "--kind", "access"],
        ["token", "--socket", "/tmp/s", "work"], ["token", "work", "--unknown", "1"], ["status", "work"], ["help", "token"],
    ])
    func leavesEverythingElseToArgumentParser(_ arguments: [String]) {
        #expect(Tokenctl.Token.parseFast(arguments) == nil)
    }
}

/// `tokenctl token ACCOUNT` read from argv (`Tokenctl.runPlainToken`, main.swift's first try)
/// must take exactly the plain form and behave as `run` does for it: same request bytes, same
/// status, stdout and stderr, whatever the daemon answers.
@Suite("plain token from argv")
struct PlainTokenTests {
    /// `plainTokenAccount` over a real C argv (program name first).
    private static func account(_ arguments: [[UInt8]]) -> String? {
        let strings = ([Array("tokenctl".utf8)] + arguments).map { bytes in
            let copy = UnsafeMutablePointer<CChar>.allocate(capacity: bytes.count + 1)
            for (index, byte) in bytes.enumerated() { copy[index] = CChar(bitPattern: byte) }
            copy[bytes.count] = 0
            return copy
        }
        defer { strings.forEach { $0.deallocate() } }
        var argv: [UnsafeMutablePointer<CChar>?] = strings + [nil]
        return Tokenctl.plainTokenAccount(Int32(strings.count), &argv)
    }

    @Test(arguments: [
        ["token", "work"], ["token", "ünïcode-account"], ["token", "quote\"back\\slash"], ["token", "a b"],
        ["token"], ["token", ""], ["token", "-h"], ["token", "--help"], ["token", "work", "--kind", "id"],
        ["token", "work", "--"], ["token", "work", "extra"], ["tokens", "work"], ["Token", "work"], ["header", "work"],
        ["status", "work"], ["help", "token"], [],
    ])
    func takesOnlyThePlainForm(_ arguments: [String]) {
        let plain = FastArguments(arguments, name: Tokenctl.Token.fastName).flatMap { arguments.count == 2 && $0.trailing == nil ? $0.account : nil }
        #expect(Self.account(arguments.map { Array($0.utf8) }) == plain)
    }

    @Test func invalidUTF8IsLeftToTheGeneralPath() {
        #expect(Self.account([Array("token".utf8), [0x77, 0xFF]]) == nil)
    }

    @Test(arguments: ["work", "ünïcode-account", "quote\"back\\slash\ttab\u{1}", "a b"])
    func writesTheGeneralPathsLine(_ account: String) throws {
        let fast = try #require(FastArguments(["token", account], name: Tokenctl.Token.fastName))
        let line = TokenExchangeCoding.plainTokenLine(account: account, id: DaemonConnection.plainRequestID, timeout: 30)
        #expect(line == fast.fields.command(account: account).line(id: DaemonConnection.requestID))
    }

    static let replies: [[String]] = [
        [#"{"id":1,"ok":true,"account":"work","token":"eyJ.eyJ.c2ln","kind":"id","expires_at":"2099-01-01T00:00:00Z","expires_in":3599}"#],
        [#"{"ok":true,"token":"t"}"#],
        [#"{"id":1,"ok":false,"error":{"code":"needs_login","message":"the refresh token was revoked"}}"#],
        [#"{"id":1,"ok":false,"error":{"code":"unknown_account","message":"no such account"}}"#],
        [#"{"id":1,"ok":false,"error":{"code":"unavailable","message":"try later"}}"#],
        [#"{"id":2,"ok":true,"token":"t"}"#],
        [#"{"id":1,"ok":true,"token":"two words"}"#],
        [#"{"id":1,"ok":true,"token":"t","expires_at":"soon"}"#],
        [#"{"id":1,"ok":true,"token":"a\u0041","warning":"x"}"#],
        [#"{"id":1,"ok":true}"#],
        ["not json"],
        [],
    ]

    @Test(arguments: replies)
    func answersAsTheGeneralPathDoes(_ reply: [String]) throws {
        let daemon = try FakeDaemon(replies: reply)
        defer { daemon.stop() }
        let environment: Environment = ["TOKEND_SOCKET": daemon.path]
        let general = CapturingConsole()
        let plain = CapturingConsole()
        #expect(Tokenctl.runPlainToken("work", environment: environment, console: plain) == runTokenctl(["token", "work"], console: general, environment: environment))
        #expect(plain.stdout == general.stdout)
        #expect(plain.stderr == general.stderr)
        #expect(daemon.received.count == 2 && daemon.received[0] == daemon.received[1])
    }

    @Test(arguments: [["TOKEND_SOCKET": "/nonexistent/tokend.sock"], [:], ["XDG_RUNTIME_DIR": String(repeating: "d", count: 120)]] as [[String: String]])
    func failsAsTheGeneralPathDoesWithoutADaemon(_ variables: [String: String]) {
        let environment = Environment(variables)
        let general = CapturingConsole()
        let plain = CapturingConsole()
        #expect(Tokenctl.runPlainToken("work", environment: environment, console: plain) == runTokenctl(["token", "work"], console: general, environment: environment))
        #expect(plain.stdout == general.stdout && plain.stdout.isEmpty)
        #expect(plain.stderr == general.stderr && !plain.stderr.isEmpty)
    }
}
