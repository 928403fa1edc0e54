import Foundation
import Testing
import TokendTestSupport

/// The built `tokenctl` binary, end to end: what a shell script sees, exit status included.
@Suite("The tokenctl executable")
struct ExecutableTests {
    /// The test bundle and the executable are built side by side in the same products directory.
    static var binary: URL {
        get throws {
            let testBinary = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
            let url = URL(fileURLWithPath: testBinary).deletingLastPathComponent().appendingPathComponent("tokenctl")
            try #require(FileManager.default.isExecutableFile(atPath: url.path), "build tokenctl first: \(url.path)")
            return url
        }
    }

    struct Outcome {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    static func run(_ arguments: [String]) throws -> Outcome {
        let result = try ChildProcess.run(try binary.path, arguments, environment: ["PATH": "/usr/bin:/bin"])
        return Outcome(status: result.status, stdout: result.stdout, stderr: result.stderr)
    }

    @Test func tokenPrintsOnlyTheToken() throws {
        let daemon = try FakeDaemon(replies: [#"{"id":1,"ok":true,"token":"abc.def.ghi","kind":"id","expires_in":3599}"#])
        defer { daemon.stop() }
        let outcome = try Self.run(["token", "work", "--socket", daemon.path])
        #expect(outcome.status == 0)
        #expect(outcome.stdout == "abc.def.ghi\n")
        #expect(outcome.stderr.isEmpty)
    }

    @Test func needsLoginExits77() throws {
        let daemon = try FakeDaemon(replies: [#"{"ok":false,"error":{"code":"needs_login","message":"revoked"}}"#])
        defer { daemon.stop() }
        let outcome = try Self.run(["token", "work", "--socket", daemon.path])
        #expect(outcome.status == 77)
        #expect(outcome.stdout.isEmpty)
        #expect(outcome.stderr == "tokenctl: work needs a new login (revoked); run: tokenctl login work\n")
    }

    @Test func noDaemonExits69() throws {
        let outcome = try Self.run(["token", "work", "--socket", pathWithoutDaemon()])
        #expect(outcome.status == 69)
        #expect(outcome.stdout.isEmpty)
        #expect(outcome.stderr.filter { $0 == "\n" }.count == 1)
    }

    @Test func usageErrorExits64() throws {
        let outcome = try Self.run(["token", "work", "--kind", "nope"])
        #expect(outcome.status == 64)
        #expect(outcome.stderr.hasPrefix("tokenctl: "))
    }
}
