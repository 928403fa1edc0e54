import CLibsecret
import Testing
import TokendCore
@testable import TokendKeyring
import TokendTestSupport

@Suite
struct KeyringErrorTests {
    private func error(_ domain: GQuark, _ code: Int32, _ message: String = "message") -> KeyringError {
        KeyringError(consuming: g_error_new_literal(domain, code, message))
    }

    @Test func gerrorsMapToCodesAndKeepTheirFields() {
        let locked = error(secret_error_get_quark(), Int32(SECRET_ERROR_IS_LOCKED.rawValue), "Cannot create an item in a locked collection")
        #expect(locked.code == .locked)
        #expect(locked.domain == "secret-error")
        #expect(locked.gerrorCode == Int32(SECRET_ERROR_IS_LOCKED.rawValue))
        #expect(locked.message == "Cannot create an item in a locked collection")

        #expect(error(g_io_error_quark(), 0, "Cannot autolaunch D-Bus without X11 $DISPLAY").code == .unavailable)
        #expect(error(g_dbus_error_quark(), Int32(G_DBUS_ERROR_SERVICE_UNKNOWN.rawValue)).code == .unavailable)
        #expect(error(g_io_error_quark(), Int32(G_IO_ERROR_CANCELLED.rawValue)).code == .timedOut)
        #expect(error(secret_error_get_quark(), Int32(SECRET_ERROR_PROTOCOL.rawValue)).code == .failed)
    }

    @Test func aVanishedServiceIsWorthARetryAndOtherErrorsAreNot() {
        // What a call into a replaced gnome-keyring answers (measured with libsecret 0.20.5).
        #expect(error(g_dbus_error_quark(), Int32(G_DBUS_ERROR_SERVICE_UNKNOWN.rawValue)).meansServiceWentAway)
        #expect(error(g_io_error_quark(), Int32(G_IO_ERROR_DBUS_ERROR.rawValue), "The session wrapping the secret does not exist").meansServiceWentAway)
        #expect(error(g_io_error_quark(), Int32(G_IO_ERROR_CLOSED.rawValue)).meansServiceWentAway)

        #expect(!error(secret_error_get_quark(), Int32(SECRET_ERROR_IS_LOCKED.rawValue)).meansServiceWentAway)
        #expect(!error(g_io_error_quark(), Int32(G_IO_ERROR_CANCELLED.rawValue)).meansServiceWentAway)
        #expect(!KeyringError(.unavailable, "ours, no GError").meansServiceWentAway)
    }

    @Test func tokendErrorsSayWhatToDo() {
        let locked = TokendError(KeyringError(.locked, "the item is locked"), account: "work")
        #expect(locked.code == .keyringLocked)
        #expect(locked.message.contains("log in to the desktop session"))
        #expect(locked.message.contains("systemctl --user enable --now tokend-keyring"), "the headless way too")
        #expect(locked.message.contains("dbus-run-session -- sh -c 'gnome-keyring-daemon --unlock"), "and without a user manager")

        let unavailable = TokendError(KeyringError(.unavailable, "Cannot autolaunch D-Bus without X11 $DISPLAY"))
        #expect(unavailable.code == .keyringUnavailable)
        #expect(unavailable.message.contains("no Secret Service on the session bus: start gnome-keyring-daemon"))

        #expect(TokendError(KeyringError(.timedOut, "no answer")).code == .keyringUnavailable)
        #expect(TokendError(KeyringError(.failed, "refused")).code == .keyringUnavailable)

        let corrupt = KeyringError(.corrupt, "not a token set").tokendError(account: "work")
        #expect(corrupt.code == .needsLogin)
        #expect(corrupt.message.contains("tokenctl login work"))
    }

    /// Issue 45: a GError's message is the Secret Service's (any program's) words: its control
    /// characters become spaces before they reach the log or a client.
    @Test func aServicesMessageLosesItsControlCharacters() {
        #expect(error(g_dbus_error_quark(), 1, "bad\u{1B}[2J\nline").message == "bad [2J line")
    }

    /// Issue 45: the Secret Service's process name is whatever that process chose (it writes its
    /// own /proc/PID/comm); an escape sequence and a newline in it never reach the log. Before,
    /// the name came back raw.
    @Test func aServiceProcessNameLosesItsControlCharacters() async throws {
        let pid = try ChildProcess.start("/bin/sh", ["-c", #"printf 'evil\033[2J\nx' >/proc/$$/comm && sleep 60"#], environment: [:])
        defer { _ = try? ChildProcess.terminate(pid) }
        try await poll(timeout: Patience.seconds, "the child did not rename itself") {
            SecretServiceProvider.command(of: pid)?.hasPrefix("evil") == true
        }
        #expect(SecretServiceProvider.command(of: pid) == "evil [2J x")
    }
}
