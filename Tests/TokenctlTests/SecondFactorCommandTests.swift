import Foundation
import Testing
import TokendTestSupport

@testable import TokenctlKit

/// tokenctl's side of a second factor (issue 33, item 5) against a fake daemon: the code read
/// after the password, sent with the daemon's handle; what is refused before any request.
@Suite struct SecondFactorCommandTests {
    static let challenge = [
        #"{"id":1,"progress":"second_factor","account":"work","factor":"t1","handle":"h-1","factors":[{"id":"t1","kind":"totp","display_name":"phone app"}]}"#,
        #"{"id":1,"ok":false,"error":{"code":"needs_login","message":"SECOND_FACTOR_REQUIRED: the user has a second factor"}}"#,
    ]
    static let done = [#"{"id":1,"ok":true,"progress":"done","account":"work","sign_in_provider":"password","expires_at":"2099-01-01T00:00:00Z","expires_in":3599}"#]

    /// The fake daemon: the first request gets the challenge, the `second_factor` one the end.
    static func daemon() throws -> FakeDaemon {
        try FakeDaemon { line in line.contains(#""second_factor""#) ? done : challenge }
    }

    @Test func theCodeIsTheLineAfterThePasswordAndGoesWithTheHandle() throws {
        let daemon = try Self.daemon()
        defer { daemon.stop() }
        let console = CapturingConsole(input: "pass word\n 123456 \n")
        let status = runTokenctl(["login", "work", "--email", "ada@example.com", "--factor", "t1", "--socket", daemon.path], console: console)
        #expect(status == 0, "\(console.stderr)")
        #expect(console.stdout.hasPrefix("work signed in (password)"), "\(console.stdout)")
        let requests = daemon.requestObjects
        #expect(requests.count == 2)
        #expect(requests.first?["factor"] as? String == "t1" && requests.first?["secret"] as? String == "pass word")
        #expect(requests.last?["method"] as? String == "second_factor")
        #expect(requests.last?["handle"] as? String == "h-1")
        #expect(requests.last?["secret"] as? String == "123456", "the code, trimmed")
    }

    @Test(arguments: ["", "12a456", "123", "12345678901"])
    func aCodeThatIsNotFourToTenDigitsIsRefusedBeforeTheHandleIsSpent(_ code: String) throws {
        let daemon = try Self.daemon()
        defer { daemon.stop() }
        let console = CapturingConsole(input: "pass word\n\(code)\n")
        #expect(runTokenctl(["login", "work", "--email", "ada@example.com", "--socket", daemon.path], console: console) == 64)
        #expect(daemon.requestObjects.count == 1, "the handle was spent on a malformed code")
    }

    @Test func theEnrollmentPrintsTheURIAndAnswersWithTheFirstLineOfStdin() throws {
        let started = #"{"id":1,"ok":true,"account":"work","enrollment":{"handle":"e-1","secret":"GEZDGNBV","uri":"otpauth://totp/p:ada%40example.com?secret=GEZDGNBV&issuer=p","digits":6,"period":30}}"#
        let finished = #"{"id":1,"ok":true,"account":"work","expires_at":"2099-01-01T00:00:00Z","expires_in":3599}"#
        let daemon = try FakeDaemon { line in [line.contains(#""handle""#) ? finished : started] }
        defer { daemon.stop() }
        let console = CapturingConsole(input: "654321\n")
        #expect(runTokenctl(["account", "mfa", "enroll", "work", "--totp", "--socket", daemon.path], console: console) == 0, "\(console.stderr)")
        #expect(console.stdout.hasPrefix("otpauth://totp/p:ada%40example.com?secret=GEZDGNBV&issuer=p\n"), "\(console.stdout)")
        #expect(console.stderr.contains("authenticator app"), "one hint line off a terminal: \(console.stderr)")
        #expect(daemon.requestObjects.last?["action"] as? String == "mfa_enroll")
        #expect(daemon.requestObjects.last?["handle"] as? String == "e-1" && daemon.requestObjects.last?["secret"] as? String == "654321")
    }

    @Test(arguments: [
        ["account", "mfa", "enroll", "work"],
        ["login", "work", "--email", "ada@example.com", "--factor", ""],
        ["account", "mfa", "remove", "work"],
    ])
    func usageErrorsExit64(_ arguments: [String]) {
        let console = CapturingConsole()
        #expect(runTokenctl(arguments + ["--socket", pathWithoutDaemon()], console: console) == 64, "\(console.stderr)")
    }

    @Test func removeSendsTheFactor() throws {
        let daemon = try FakeDaemon(replies: [#"{"id":1,"ok":true,"account":"work"}"#])
        defer { daemon.stop() }
        let console = CapturingConsole()
        #expect(runTokenctl(["account", "mfa", "remove", "work", "t1", "--socket", daemon.path], console: console) == 0, "\(console.stderr)")
        #expect(daemon.requestObjects.first?["action"] as? String == "mfa_remove" && daemon.requestObjects.first?["factor"] as? String == "t1")
    }
}
