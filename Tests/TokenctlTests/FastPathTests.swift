import ArgumentParser
import Testing

@testable import tokenctl

/// `token`'s hand parser must accept only what ArgumentParser accepts, with the same result.
@Suite("token fast path")
struct FastPathTests {
    @Test(arguments: [
        ["token", "work"],
        ["token", "work", "--socket", "/tmp/s", "--timeout", "5", "--kind", "id", "--min-valid", "60"],
        ["token", "work", "--kind=access", "--min-valid=0", "--timeout=0.25", "--socket=/run/t.sock"],
        ["token", "work", "--min-valid", "1e3"],
        ["token", "ünïcode-account"],
    ])
    func takesTheFastPathAndAgreesWithArgumentParser(_ arguments: [String]) throws {
        let fast = try #require(Tokenctl.Token.parseFast(arguments))
        let full = try #require(try Tokenctl.parseAsRoot(arguments) as? Tokenctl.Token)
        #expect(fast.account == full.account)
        #expect(fast.minValid == full.minValid)
        #expect(fast.kind == full.kind)
        #expect(fast.connection.socket == full.connection.socket)
        #expect(fast.connection.timeout == full.connection.timeout)
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
