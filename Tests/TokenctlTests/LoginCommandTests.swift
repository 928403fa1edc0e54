import Foundation
import Testing
import TokendTestSupport

@testable import TokenctlKit

/// `tokenctl login` and `tokenctl account` against a fake daemon: what they send, how they relay
/// a streamed sign-in, and how failures become exit codes.
@Suite struct LoginCommandTests {
    @Test func passwordGoesInTheRequestNeverInArgvAndTheStreamIsRelayed() throws {
        let daemon = try FakeDaemon(replies: [
            #"{"id":1,"progress":"open_url","account":"work","url":"https://accounts.example.com/auth?state=s"}"#,
            #"{"id":1,"progress":"user_code","account":"work","verification_uri":"https://example.com/device","user_code":"ABCD-EFGH"}"#,
            #"{"id":1,"progress":"waiting","account":"work","message":"waiting for the browser"}"#,
            #"{"id":1,"ok":true,"progress":"done","account":"work","sign_in_provider":"password","expires_at":"2099-01-01T00:00:00Z","expires_in":3599}"#,
        ])
        defer { daemon.stop() }
        let console = CapturingConsole(input: "pass word\nignored second line\n")
        let status = runTokenctl(["login", "work", "--email", "ada@example.com", "--socket", daemon.path, "--no-browser"], console: console)
        #expect(status == 0, "\(console.stderr)")
        let lines = console.stdout.split(separator: "\n").map(String.init)
        #expect(lines.contains("https://accounts.example.com/auth?state=s"), "the URL on a line of its own: \(lines)")
        #expect(lines.contains("To sign in, visit https://example.com/device and enter the code: ABCD-EFGH"))
        #expect(lines.last?.hasPrefix("work signed in (password), expires at 2099-01-01T00:00:00Z") == true)
        let request = try #require(daemon.requestObjects.first)
        #expect(request["op"] as? String == "login")
        #expect(request["method"] as? String == "email")
        #expect(request["email"] as? String == "ada@example.com")
        #expect(request["secret"] as? String == "pass word", "the first line of stdin, spaces kept")
        #expect(request["timeout"] as? Double == 300)
    }

    @Test func aTerminalGetsANoEchoPrompt() throws {
        let daemon = try FakeDaemon(replies: [#"{"id":1,"ok":true,"progress":"done","account":"work"}"#])
        defer { daemon.stop() }
        let console = CapturingConsole(input: "typed\n")
        console.inputIsTerminal = true
        #expect(runTokenctl(["login", "work", "--email", "ada@example.com", "--socket", daemon.path], console: console) == 0)
        #expect(console.prompts == ["Password for ada@example.com: "])
        #expect(daemon.requestObjects.first?["secret"] as? String == "typed")
    }

    @Test(arguments: [("needs_login", Int32(77)), ("config_error", 78), ("unavailable", 75), ("bad_request", 64)])
    func aFailedSignInExitsWithItsKind(_ code: String, _ expected: Int32) throws {
        let daemon = try FakeDaemon(replies: [#"{"id":1,"ok":false,"error":{"code":"\#(code)","message":"CODE: said by tokend"}}"#])
        defer { daemon.stop() }
        let console = CapturingConsole()
        #expect(runTokenctl(["login", "work", "--anonymous", "--socket", daemon.path], console: console) == expected)
        #expect(console.stderr.contains("CODE: said by tokend"))
        #expect(console.stderr.filter { $0 == "\n" }.count == 1)
    }

    /// `--idp ID` (and `--google`, its short form) send method `idp` with the provider id;
    /// `--device` with it asks for the provider's device grant.
    @Test func identityProviderFlagsSendTheProviderID() throws {
        for (arguments, idp, device) in [
            (["login", "work", "--idp", "microsoft.com"], "microsoft.com", false),
            (["login", "work", "--google"], "google.com", false),
            (["login", "work", "--idp", "github.com", "--device"], "github.com", true),
            (["account", "upgrade", "work", "--idp", "github.com", "--device"], "github.com", true),
        ] {
            let daemon = try FakeDaemon(replies: [#"{"id":1,"ok":true,"progress":"done","account":"work","sign_in_provider":"x"}"#])
            defer { daemon.stop() }
            let console = CapturingConsole()
            #expect(runTokenctl(arguments + ["--socket", daemon.path, "--no-browser"], console: console) == 0, "\(arguments): \(console.stderr)")
            let request = try #require(daemon.requestObjects.first)
            #expect(request["method"] as? String == "idp", "\(arguments)")
            #expect(request["idp"] as? String == idp, "\(arguments)")
            #expect((request["device"] as? Bool ?? false) == device, "\(arguments)")
        }
    }

    @Test func contradictoryFlagsAreUsageErrors() {
        for arguments in [
            ["login", "work", "--anonymous", "--google"], ["login", "work", "--create"], ["account", "upgrade", "work"],
            ["login", "work", "--google", "--idp", "github.com"], ["login", "work", "--idp", ""], ["login", "work", "--email", "a@b.c", "--idp", "github.com"],
            ["account", "upgrade", "work", "--device"], ["account", "upgrade", "work", "--google", "--idp", "github.com"],
        ] {
            let console = CapturingConsole()
            #expect(runTokenctl(arguments, console: console, environment: ["TOKEND_SOCKET": "/nonexistent"]) == 64, "\(arguments)")
        }
    }

    @Test func deleteWithoutYesSaysWhatWouldBeDeleted() throws {
        let daemon = try FakeDaemon(replies: [
            #"{"id":1,"ok":false,"error":{"code":"bad_request","message":"this deletes Firebase user u1 (ada@example.com) of project p for good"}}"#
        ])
        defer { daemon.stop() }
        let console = CapturingConsole()
        #expect(runTokenctl(["account", "delete", "work", "--socket", daemon.path], console: console) == 64)
        #expect(console.stderr.contains("not deleted: this deletes Firebase user u1"))
        #expect(console.stderr.contains("tokenctl account delete work --yes"))
        #expect(daemon.requestObjects.first?["confirm"] as? Bool == false)
        #expect(daemon.requestObjects.first?["action"] as? String == "delete")
    }

    /// With a display, the real executable hands the sign-in URL to `xdg-open` (found on PATH);
    /// `--no-browser` only prints it.
    @Test func theURLIsOpenedWithXdgOpenWhenThereIsADisplay() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tokenctl-xdg-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let opened = directory.appendingPathComponent("opened").path
        let script = directory.appendingPathComponent("xdg-open").path
        try "#!/bin/sh\nprintf '%s\\n' \"$@\" >> \(opened)\n".write(toFile: script, atomically: true, encoding: .utf8)
        chmod(script, 0o755)
        for (url, flags) in [("https://idp.example.com/printed-only", ["--no-browser"]), ("https://idp.example.com/opened", [])] {
            let daemon = try FakeDaemon(replies: [
                #"{"id":1,"progress":"open_url","account":"corp","url":"\#(url)"}"#, #"{"id":1,"ok":true,"progress":"done","account":"corp"}"#,
            ])
            defer { daemon.stop() }
            let run = try ChildProcess.run(
                try ExecutableTests.binary.path, ["login", "corp", "--socket", daemon.path] + flags,
                environment: ["PATH": directory.path + ":/usr/bin:/bin", "DISPLAY": ":99"])
            let stdout = run.stdout
            #expect(run.status == 0)
            #expect(stdout.split(separator: "\n").contains(Substring(url)), "printed on a line of its own: \(stdout)")
        }
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline, !((try? String(contentsOfFile: opened, encoding: .utf8)) ?? "").contains(".html") {
            Thread.sleep(forTimeInterval: 0.05)  // polling for the detached xdg-open, with a deadline
        }
        // xdg-open gets a page that redirects to the URL, never the URL: argv is readable by
        // every user (LoginListenerAttackTests checks the page and its mode end to end).
        let calls = (try? String(contentsOfFile: opened, encoding: .utf8)) ?? ""
        #expect(calls.split(separator: "\n").count == 1 && calls.contains("/sign-in-") && calls.hasSuffix(".html\n"), "xdg-open got: \(calls)")
        #expect(!calls.contains("idp.example.com"), "xdg-open got: \(calls)")
    }
}
