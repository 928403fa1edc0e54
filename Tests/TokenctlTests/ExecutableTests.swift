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

    /// `tokend &` then at once `tokenctl`: a tokend started beside it (the same parent) gets a
    /// moment to bind its socket; one that never does is named in the one line (issue 46). The
    /// stand-in is sleep(1) under the name tokend: it never listens.
    @Test func aSiblingTokendThatNeverListensIsNamed() throws {
        let directory = try TemporaryDirectory()
        defer { try? directory.remove() }
        let script = """
            cp /bin/sleep "$1/tokend" || exit 1
            "$1/tokend" 60 &
            sleeper=$!
            until [ "$(cat /proc/$sleeper/comm)" = tokend ]; do sleep 0.01; done
            "$2" token work --socket "$3" --timeout 1; status=$?
            kill $sleeper; exit $status
            """
        let result = try ChildProcess.run(
            "/bin/sh", ["-c", script, "sh", directory.path, try Self.binary.path, pathWithoutDaemon()], environment: ["PATH": "/usr/bin:/bin"])
        #expect(result.status == 69)
        #expect(result.stderr.contains(") runs but did not listen at "), "\(result.stderr)")
        #expect(result.stderr.filter { $0 == "\n" }.count == 1)
    }

    @Test func usageErrorExits64() throws {
        let outcome = try Self.run(["token", "work", "--kind", "nope"])
        #expect(outcome.status == 64)
        #expect(outcome.stderr.hasPrefix("tokenctl: "))
    }
}
