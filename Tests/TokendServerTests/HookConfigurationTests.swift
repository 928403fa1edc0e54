import Testing
#if canImport(Glibc)
import Glibc
#endif
import TokendTestSupport
@testable import TokendServer

/// The keys issue 11 added: `[hooks]`, `notify`, `git_hosts`, `git_username`; and the
/// notification's once-an-hour rule on an injected clock.
@Suite struct HookConfigurationTests {
    func parse(_ text: String) throws(ConfigurationError) -> Configuration {
        try Configuration.parse(text, path: "/c.toml", environment: [:])
    }

    let account = "[account.work]\nprovider = \"firebase\"\napi_key = \"k\"\n"

    @Test func hooksNotifyAndGitKeys() throws {
        let configuration = try parse("""
            notify = false
            [hooks]
            needs_login = ["/usr/bin/logger", "-t", "tokend"]
            keyring_locked = ["/bin/true"]

            \(account)git_hosts = ["git.example.com", "github.com/my-org"]
            git_username = "builder"
            """)
        #expect(!configuration.notify)
        #expect(configuration.hooks == ["needs_login": ["/usr/bin/logger", "-t", "tokend"], "keyring_locked": ["/bin/true"]])
        #expect(configuration.accounts["work"]?.gitHosts == ["git.example.com", "github.com/my-org"])
        #expect(configuration.accounts["work"]?.gitUsername == "builder")
        let defaults = try parse(account)
        #expect(defaults.notify && defaults.hooks.isEmpty && defaults.accounts["work"]?.gitHosts == [] && defaults.accounts["work"]?.gitUsername == nil)
    }

    @Test(arguments: [
        ("[hooks]\nrefreshd = [\"/bin/true\"]\n", "hooks.refreshd", 2),
        ("[hooks]\nrefreshed = \"/bin/true\"\n", "hooks.refreshed", 2),
        ("[hooks]\nrefreshed = []\n", "hooks.refreshed", 2),
        ("[hooks]\nrefreshed = [\"\"]\n", "hooks.refreshed", 2),
        ("hooks = 3\n", "hooks", 1),
        ("notify = \"no\"\n", "notify", 1),
        ("notifications = false\n", "notifications", 1),
    ])
    func badHooksAndNotifyAreLocatedErrors(_ text: String, _ key: String, _ line: Int) {
        #expect {
            try parse(text + "\n" + account)
        } throws: { error in
            let error = error as? ConfigurationError
            return error?.key == key && error?.line == line
        }
    }

    @Test(arguments: ["git_hosts = \"git.example.com\"", "git_hosts = [\"\"]", "git_hosts = [\"has space.example.com\"]", "git_hosts = [3]", "git_username = \"\""])
    func badGitKeysAreErrors(_ line: String) {
        #expect(throws: ConfigurationError.self) { try parse(account + line + "\n") }
    }

    /// Account names may begin with `-`: notify-send must read it as text, not as an option.
    @Test func anAccountNamedLikeAnOptionIsNotOneToNotifySend() throws {
        let directory = try TemporaryDirectory()
        defer { try? directory.remove() }
        let notifier = DesktopNotifier(environment: ["DISPLAY": ":0", "PATH": directory.path], clock: ManualClock(), interval: 3600)
        _ = try Self.notifySendStub(in: directory)
        let command = try #require(notifier.notification(for: "-x"))
        let end = try #require(command.firstIndex(of: "--"), "no end of options in \(command)")
        // The options before `--` (not the program's path: a temporary directory may hold "-x").
        #expect(command[1..<end].allSatisfy { !$0.contains("-x") }, "\(command)")
        #expect(command[end...].contains { $0.hasPrefix("-x needs") })
    }

    /// An executable `notify-send` that does nothing, in `directory`; its path.
    static func notifySendStub(in directory: TemporaryDirectory) throws -> String {
        let stub = directory.appending("notify-send")
        try "#!/bin/sh\n".write(toFile: stub, atomically: true, encoding: .utf8)
        chmod(stub, 0o755)
        return stub
    }

    @Test func aNotificationAtMostOncePerIntervalPerAccount() throws {
        let directory = try TemporaryDirectory()
        defer { try? directory.remove() }
        let stub = try Self.notifySendStub(in: directory)
        let clock = ManualClock()
        let notifier = DesktopNotifier(environment: ["DISPLAY": ":0", "PATH": directory.path], clock: clock, interval: 3600)
        #expect(notifier.notification(for: "work")?.first == stub)
        #expect(notifier.notification(for: "work") == nil)
        #expect(notifier.notification(for: "home") != nil, "per account")
        clock.advance(by: 3599)
        #expect(notifier.notification(for: "work") == nil)
        clock.advance(by: 1)
        let again = try #require(notifier.notification(for: "work"))
        #expect(again.last == "work needs you to sign in again: tokenctl login work")
        #expect(notifier.notification(for: "work") == nil)

        let headless = DesktopNotifier(environment: ["PATH": directory.path], clock: clock)
        #expect(headless.notification(for: "work") == nil, "no display, no notification")
        let without = DesktopNotifier(environment: ["WAYLAND_DISPLAY": "wayland-0", "PATH": "/nonexistent"], clock: clock)
        #expect(without.notification(for: "work") == nil, "no notify-send, no notification")
    }
}
