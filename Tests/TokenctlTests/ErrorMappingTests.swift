import TokendCore
import TokendProtocol
import Testing

@testable import TokenctlKit

@Suite("Errors and exit codes")
struct ErrorMappingTests {
    static let pinned: [(TokendError.Code, Int32)] = [
        (.badRequest, 64), (.tooLarge, 1), (.unsupportedOp, 1), (.unknownAccount, 67), (.needsLogin, 77),
        (.unavailable, 75), (.keyringLocked, 75), (.keyringUnavailable, 75), (.configError, 78), (.forbidden, 78), (.internal, 1),
        (TokendError.Code(rawValue: "a_code_from_the_future"), 1),
    ]

    @Test(arguments: pinned)
    func daemonCodeMapsToItsExitStatus(_ code: TokendError.Code, _ status: Int32) {
        let error = TokenctlError(daemon: TokendError(code, "what the daemon said"), account: "work", environment: [:])
        #expect(error.code.exitCode == status)
        #expect(error.line.hasPrefix("tokenctl: "))
        #expect(error.line.contains("; "))
        #expect(error.line.contains("what the daemon said"))
        #expect(!error.line.contains("\n"))
    }

    @Test func exitCodesAreTheSysexitsOfDesign6() {
        let expected: [TokenctlError.Code: Int32] = [
            .usage: 64, .unknownAccount: 67, .notReachable: 69, .temporary: 75, .needsLogin: 77, .configuration: 78,
            // A consumer socket's policy (issue 49): as the configuration, and never 77.
            .forbidden: 78, .outputClosed: 1, .failure: 1,
        ]
        for code in TokenctlError.Code.allCases { #expect(code.exitCode == expected[code], "\(code)") }
    }

    @Test func messagesSayWhatToDoNext() {
        func line(_ code: TokendError.Code) -> String {
            TokenctlError(daemon: TokendError(code, "msg"), account: "work", environment: [:]).line
        }
        #expect(line(.needsLogin) == "tokenctl: work needs a new login (msg); run: tokenctl login work")
        #expect(line(.unavailable).hasSuffix("; try again later (tokenctl status work shows the last error)"))
        #expect(line(.unknownAccount).hasSuffix("; tokenctl list shows the configured accounts"))
        #expect(line(.keyringLocked) == "tokenctl: msg; then try again")
        #expect(line(.keyringUnavailable) == "tokenctl: msg; then try again")
        #expect(line(.configError).hasSuffix(
            "; fix ~/.config/tokend/config.toml (see the message), then: systemctl --user reload tokend"))
    }

    /// The daemon's sentence is the line, said once, with what to do next (issue 36).
    @Test func theDaemonsMessageIsSaidOnce() {
        func line(_ code: TokendError.Code, _ message: String, account: String? = "nosuch") -> String {
            TokenctlError(daemon: TokendError(code, message), account: account, environment: [:]).line
        }
        #expect(line(.unknownAccount, #"no account named "nosuch" is configured"#)
            == #"tokenctl: no account named "nosuch" is configured; tokenctl list shows the configured accounts"#)
        #expect(line(.unknownAccount, "") == #"tokenctl: no account named "nosuch" is configured; tokenctl list shows the configured accounts"#)
        #expect(line(.unavailable, "no fresh token within 30 s: the refresh is still running; try again", account: "work")
            == "tokenctl: work: no fresh token within 30 s: the refresh is still running; try again; tokenctl status work shows the last error")
        #expect(line(.unavailable, "the refresh is still running after the timeout; see tokenctl status work", account: "work")
            == "tokenctl: work: the refresh is still running after the timeout; see tokenctl status work")
        #expect(line(.unavailable, "tokend is shutting down; try again once it is back", account: nil)
            == "tokenctl: tokend is shutting down; try again once it is back; tokenctl status shows the last error")
        #expect(line(.keyringUnavailable, "the keyring is busy: tokend keeps the tokens it holds in memory; try again in a few seconds (queued)")
            == "tokenctl: the keyring is busy: tokend keeps the tokens it holds in memory; try again in a few seconds (queued)")
        // Advice at the end of a sentence of its own is not repeated either (issue 46).
        #expect(TokenctlError(
            login: TokendError(.unavailable, "Firebase is unreachable; check the network and try again"), account: "work", environment: [:]).line
            == "tokenctl: signing work in failed: Firebase is unreachable; check the network and try again")
        // A provider's words quoted in the message are not the daemon's advice: the next step stays.
        #expect(line(.unavailable, "TOO_MANY_ATTEMPTS_TRY_LATER: blocked (you can try again later.)", account: "work")
            == "tokenctl: work: TOO_MANY_ATTEMPTS_TRY_LATER: blocked (you can try again later.); try again later (tokenctl status work shows the last error)")
    }

    @Test func configHintFollowsTheEnvironment() {
        let error = TokenctlError(
            daemon: TokendError(.configError, "line 3: unknown key"), account: nil, environment: ["XDG_CONFIG_HOME": "/home/u/cfg"])
        #expect(error.line.contains("fix /home/u/cfg/tokend/config.toml"))
    }

    @Test func daemonTextCannotBreakTheLine() {
        let error = TokenctlError(daemon: TokendError(.internal, "two\nlines\u{1B}[2J"), account: "work", environment: [:])
        #expect(!error.line.contains("\n"))
        #expect(!error.line.contains("\u{1B}"))
    }

    @Test(arguments: [
        (BlockingClient.Failure.Code.notReachable, Int32(69)), (.closed, 69), (.timedOut, 69), (.protocolError, 1),
    ])
    func connectionFailures(_ code: BlockingClient.Failure.Code, _ status: Int32) {
        let error = TokenctlError(connection: code, detail: "tokend is not reachable at /run/x (Connection refused)", path: "/run/x", timeout: 30)
        #expect(error.code.exitCode == status)
        #expect(error.line.hasPrefix("tokenctl: "))
    }

    @Test func notRunningNamesThePathAndTheFix() {
        #expect(
            TokenctlError(connection: .notReachable, detail: "tokend is not reachable at /run/x (Connection refused)", path: "/run/x", timeout: 30).line
                == "tokenctl: tokend is not running at /run/x (Connection refused); start it: systemctl --user start tokend.socket")
    }

    @Test func timeoutNamesTheWait() {
        #expect(
            TokenctlError(connection: .timedOut, detail: "tokend did not answer in time", path: "/run/x", timeout: 2.5).line
                .contains("within 2.5s"))
    }
}
