import ArgumentParser
import Testing

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
