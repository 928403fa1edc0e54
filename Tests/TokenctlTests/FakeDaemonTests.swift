import Foundation
import Testing

@testable import TokenctlKit

/// The real client code against a fake daemon on a real Unix socket, in-process.
@Suite("Against a fake daemon")
struct FakeDaemonTests {
    static let token = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ1MSJ9.c2ln"

    @Test func tokenPrintsOnlyTheToken() throws {
        let daemon = try FakeDaemon(replies: [
            #"{"id":1,"ok":true,"account":"work","token":"\#(Self.token)","kind":"id","expires_at":"2099-01-01T00:00:00Z","expires_in":3599}"#
        ])
        defer { daemon.stop() }
        let console = CapturingConsole()
        let status = runTokenctl(["token", "work", "--socket", daemon.path, "--min-valid", "120", "--kind", "id", "--timeout", "7"], console: console)
        #expect(status == 0)
        #expect(console.stdout == Self.token + "\n")
        #expect(console.stderr.isEmpty)

        let request = try #require(daemon.requestObjects.first)
        #expect(request["op"] as? String == "token")
        #expect(request["account"] as? String == "work")
        #expect(request["min_valid"] as? Double == 120)
        #expect(request["kind"] as? String == "id")
        #expect(request["timeout"] as? Double == 7)
        #expect(request["id"] as? Int == 1)
    }

    @Test func tokenLeavesDefaultsToTheDaemon() throws {
        let daemon = try FakeDaemon(replies: [#"{"ok":true,"token":"t"}"#])
        defer { daemon.stop() }
        #expect(runTokenctl(["token", "work"], environment: ["TOKEND_SOCKET": daemon.path]) == 0)
        let request = try #require(daemon.requestObjects.first)
        #expect(request["min_valid"] == nil)
        #expect(request["kind"] == nil)
        #expect(request["timeout"] as? Double == 30)
    }

    @Test(arguments: [
        ("needs_login", Int32(77)), ("unknown_account", 67), ("unavailable", 75), ("keyring_locked", 75),
        ("keyring_unavailable", 75), ("config_error", 78), ("bad_request", 64), ("internal", 1), ("too_large", 1),
        ("unsupported_op", 1),
    ])
    func daemonErrorsBecomeExitCodes(_ code: String, _ expected: Int32) throws {
        let daemon = try FakeDaemon(replies: [#"{"id":1,"ok":false,"error":{"code":"\#(code)","message":"said by tokend"}}"#])
        defer { daemon.stop() }
        let console = CapturingConsole()
        #expect(runTokenctl(["token", "work", "--socket", daemon.path], console: console) == expected)
        #expect(console.stdout.isEmpty)
        #expect(console.stderr.hasPrefix("tokenctl: "))
        #expect(console.stderr.contains("said by tokend"))
        #expect(console.stderr.filter { $0 == "\n" }.count == 1)
    }

    @Test func needsLoginTellsWhatToRun() throws {
        let daemon = try FakeDaemon(replies: [#"{"ok":false,"error":{"code":"needs_login","message":"the refresh token was revoked"}}"#])
        defer { daemon.stop() }
        let console = CapturingConsole()
        #expect(runTokenctl(["token", "work", "--socket", daemon.path], console: console) == 77)
        #expect(console.stderr == "tokenctl: work needs a new login (the refresh token was revoked); run: tokenctl login work\n")
    }

    @Test func noDaemonIs69() {
        let path = pathWithoutDaemon()
        let console = CapturingConsole()
        #expect(runTokenctl(["token", "work", "--socket", path], console: console) == 69)
        #expect(console.stdout.isEmpty)
        #expect(console.stderr.hasPrefix("tokenctl: tokend is not running at \(path) ("))
        #expect(console.stderr.hasSuffix("; start it: systemctl --user start tokend.socket\n"))
    }

    @Test func missingRuntimeDirIsAUsageError() {
        let console = CapturingConsole()
        #expect(runTokenctl(["token", "work"], console: console, environment: [:]) == 64)
        #expect(console.stderr.contains("XDG_RUNTIME_DIR is not set"))
    }

    @Test func hangUpWithoutAnswerIs69() throws {
        let daemon = try FakeDaemon(replies: [])
        defer { daemon.stop() }
        let console = CapturingConsole()
        #expect(runTokenctl(["list", "--socket", daemon.path], console: console) == 69)
        #expect(console.stderr.contains("closed the connection"))
    }

    @Test(arguments: [
        "this is not json", #"{"ok":true}"#, #"{"id":2,"ok":true,"token":"t"}"#, #"{"ok":false}"#,
        #"{"ok":true,"token":"two words"}"#,
    ])
    func protocolMismatchesAre1AndPrintNoToken(_ reply: String) throws {
        let daemon = try FakeDaemon(replies: [reply])
        defer { daemon.stop() }
        let console = CapturingConsole()
        #expect(runTokenctl(["token", "work", "--socket", daemon.path], console: console) == 1)
        #expect(console.stdout.isEmpty)
        #expect(console.stderr.hasPrefix("tokenctl: tokend sent"))
    }

    @Test func list() throws {
        let daemon = try FakeDaemon(replies: [
            #"{"ok":true,"accounts":[{"name":"work","provider":"firebase","state":"active","keyring":"available"},"#
                + #"{"name":"corp","provider":"oidc","state":"needs_login","keyring":"locked"}]}"#
        ])
        defer { daemon.stop() }
        let console = CapturingConsole()
        #expect(runTokenctl(["list", "--socket", daemon.path], console: console) == 0)
        #expect(console.stdout == "work\tfirebase\tactive\ncorp\toidc\tneeds_login\n")
        #expect(daemon.requestObjects.first?["op"] as? String == "list")
    }

    @Test func statusTable() throws {
        let daemon = try FakeDaemon(replies: [
            #"{"ok":true,"accounts":[{"name":"work","provider":"firebase","state":"active","keyring":"available","expires_in":252}]}"#
        ])
        defer { daemon.stop() }
        let console = CapturingConsole()
        #expect(runTokenctl(["status", "work", "--socket", daemon.path], console: console) == 0)
        #expect(console.stdout.hasPrefix("ACCOUNT  PROVIDER  STATE   EXPIRES IN  LAST REFRESH"))
        #expect(console.stdout.contains("work     firebase  active  4m 12s      -"))
        #expect(daemon.requestObjects.first?["account"] as? String == "work")
    }

    @Test func statusJSONKeepsTheDaemonsFields() throws {
        let daemon = try FakeDaemon(replies: [
            #"{"ok":true,"accounts":[{"name":"work","provider":"firebase","state":"active","keyring":"available","expires_in":252,"#
                + #""future_field":{"x":[1,2.5,null,true]}}]}"#
        ])
        defer { daemon.stop() }
        let console = CapturingConsole()
        #expect(runTokenctl(["status", "--json", "--socket", daemon.path], console: console) == 0)
        let decoded = try #require(try JSONSerialization.jsonObject(with: Data(console.stdout.utf8)) as? [[String: Any]])
        #expect(decoded.count == 1)
        #expect(decoded[0]["name"] as? String == "work")
        #expect(decoded[0]["future_field"] != nil)
        #expect(console.stdout.contains(#""expires_in" : 252"#))  // an integer stays an integer
        #expect(console.stdout.hasPrefix("["))
        #expect(daemon.requestObjects.first?["account"] == nil)
    }

    @Test func refresh() throws {
        let daemon = try FakeDaemon(replies: [#"{"ok":true,"account":"work","expires_at":"2099-01-01T00:00:00Z","expires_in":3599}"#])
        defer { daemon.stop() }
        let console = CapturingConsole()
        #expect(runTokenctl(["refresh", "work", "--socket", daemon.path], console: console) == 0)
        #expect(console.stdout == "work refreshed, expires at 2099-01-01T00:00:00Z (in 59m 59s)\n")
        #expect(daemon.requestObjects.first?["op"] as? String == "refresh")
    }

    @Test func importSendsStdinAndNeverPrintsIt() throws {
        let daemon = try FakeDaemon(replies: [#"{"ok":true,"account":"work","expires_at":"2099-01-01T00:00:00Z","expires_in":3600}"#])
        defer { daemon.stop() }
        let console = CapturingConsole(input: #"{"refresh_token":"SECRET-r","id_token":"SECRET-i"}"#)
        #expect(runTokenctl(["import", "work", "--socket", daemon.path], console: console) == 0)
        #expect(console.stdout == "work imported, expires at 2099-01-01T00:00:00Z (in 1h)\n")
        #expect(!console.stdout.contains("SECRET") && !console.stderr.contains("SECRET"))
        let request = try #require(daemon.requestObjects.first)
        #expect(request["op"] as? String == "import")
        #expect(request["refresh_token"] as? String == "SECRET-r")
        #expect(request["id_token"] as? String == "SECRET-i")
    }

    @Test func importPromptsOnATerminal() throws {
        let daemon = try FakeDaemon(replies: [#"{"ok":true}"#])
        defer { daemon.stop() }
        let console = CapturingConsole(input: "typed-token\n")
        console.inputIsTerminal = true
        #expect(runTokenctl(["import", "work", "--socket", daemon.path], console: console) == 0)
        #expect(console.prompts == ["Refresh token for work: "])
        #expect(daemon.requestObjects.first?["refresh_token"] as? String == "typed-token")
    }

    @Test func emptyImportIsAUsageErrorAndSendsNothing() throws {
        let daemon = try FakeDaemon(replies: [#"{"ok":true}"#])
        defer { daemon.stop() }
        let console = CapturingConsole(input: "\n  \n")
        #expect(runTokenctl(["import", "work", "--socket", daemon.path], console: console) == 64)
        #expect(console.stderr.hasPrefix("tokenctl: stdin held no refresh token; "))
        #expect(daemon.received.isEmpty)
    }

    @Test func logout() throws {
        let daemon = try FakeDaemon(replies: [#"{"ok":true,"account":"work"}"#])
        defer { daemon.stop() }
        let console = CapturingConsole()
        #expect(runTokenctl(["logout", "work", "--socket", daemon.path], console: console) == 0)
        #expect(console.stdout == "work logged out\n")
        #expect(daemon.requestObjects.first?["op"] as? String == "logout")
    }

    @Test func watchPassesEventsThroughUntilTheDaemonHangsUp() throws {
        let events = [
            #"{"event":"refreshed","account":"work","at":"2025-03-01T12:00:00Z","expires_at":"2025-03-01T13:00:00Z"}"#,
            #"{"event":"needs_login","account":"work","at":"2025-03-01T12:01:00Z","future":1}"#,
        ]
        let daemon = try FakeDaemon(replies: [#"{"id":1,"ok":true,"watching":["work"]}"#] + events)
        defer { daemon.stop() }
        let console = CapturingConsole()
        #expect(runTokenctl(["watch", "work", "--socket", daemon.path], console: console) == 69)
        #expect(console.stdout == events.joined(separator: "\n") + "\n")
        #expect(console.stderr.contains("ended the watch"))
        let request = try #require(daemon.requestObjects.first)
        #expect(request["op"] as? String == "watch")
        #expect(request["account"] as? String == "work")
        #expect(request["timeout"] == nil)
    }

    @Test func watchIsReadableOnATerminalUnlessJSONIsAskedFor() throws {
        let event = #"{"event":"refreshed","account":"work","at":"2025-03-01T12:00:00Z","expires_at":"2025-03-01T13:00:00Z"}"#
        for (arguments, expected) in [
            ([String](), "2025-03-01T12:00:00Z  work  refreshed  expires 2025-03-01T13:00:00Z\n"), (["--json"], event + "\n"),
        ] {
            let daemon = try FakeDaemon(replies: [#"{"id":1,"ok":true,"watching":["work"]}"#, event])
            defer { daemon.stop() }
            let console = CapturingConsole()
            console.outputIsTerminal = true
            #expect(runTokenctl(["watch", "work", "--socket", daemon.path] + arguments, console: console) == 69)
            #expect(console.stdout == expected)
        }
    }

    @Test func watchOfAnUnknownAccount() throws {
        let daemon = try FakeDaemon(replies: [#"{"ok":false,"error":{"code":"unknown_account","message":"no account nope"}}"#])
        defer { daemon.stop() }
        let console = CapturingConsole()
        #expect(runTokenctl(["watch", "nope", "--socket", daemon.path], console: console) == 67)
        #expect(console.stdout.isEmpty)
    }
}
