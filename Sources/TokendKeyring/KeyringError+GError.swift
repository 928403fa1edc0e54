import CLibsecret
import TokendCore

extension KeyringError {
    /// Takes a GError over (it is freed here), keeping its domain, code and message (control characters as spaces).
    init(consuming error: UnsafeMutablePointer<GError>) {
        defer { g_error_free(error) }
        let domainQuark = error.pointee.domain
        let gerrorCode = error.pointee.code
        let code: Code
        switch domainQuark {
        case secret_error_get_quark():
            code = gerrorCode == Int32(SECRET_ERROR_IS_LOCKED.rawValue) ? .locked : .failed  // conversion: a C enum constant
        case g_io_error_quark() where gerrorCode == Int32(G_IO_ERROR_CANCELLED.rawValue):  // conversion: a C enum constant
            // Only our deadline cancels an operation.
            code = .timedOut
        case g_dbus_error_quark(), g_io_error_quark():
            // Transport trouble: no bus, a closed connection, no service owning the name.
            code = .unavailable
        default:
            code = .failed
        }
        self.init(
            code,
            // The service's own words, one line: they reach the log and clients.
            error.pointee.message.map { String(cString: $0).singleLine } ?? "unknown error",
            domain: g_quark_to_string(domainQuark).map { String(cString: $0) },
            gerrorCode: gerrorCode)
    }

    /// A GError from reaching the Secret Service (taken over): whatever stops us reaching it (no
    /// bus, a dead socket, no autolaunch, no owner) is "unavailable", whichever GLib domain says so.
    init(unreachable error: UnsafeMutablePointer<GError>) {
        self.init(consuming: error)
        if code == .failed { code = .unavailable }
    }

    /// The error says the Secret Service we had a proxy and session for is gone (gnome-keyring
    /// was restarted or replaced): worth one retry on a fresh connection.
    var meansServiceWentAway: Bool {
        guard let domain, let gerrorCode else { return false }
        switch domain {
        case Self.dbusDomain:
            return Self.staleDBusErrors.contains(gerrorCode)
        case Self.ioDomain:
            // CLOSED: the bus connection dropped. DBUS_ERROR: a remote error GIO has no mapping for,
            // e.g. org.freedesktop.Secret.Error.NoSession ("the session … does not exist").
            return gerrorCode == Int32(G_IO_ERROR_CLOSED.rawValue) || gerrorCode == Int32(G_IO_ERROR_DBUS_ERROR.rawValue)  // conversion: C enum constants
        case Self.secretDomain:
            return gerrorCode == Int32(SECRET_ERROR_NO_SUCH_OBJECT.rawValue)  // conversion: a C enum constant
        default:
            return false
        }
    }

    private static let dbusDomain = String(cString: g_quark_to_string(g_dbus_error_quark()))
    private static let ioDomain = String(cString: g_quark_to_string(g_io_error_quark()))
    private static let secretDomain = String(cString: g_quark_to_string(secret_error_get_quark()))
    /// Measured after `gnome-keyring-daemon --replace`: calls to the old unique name answer
    /// SERVICE_UNKNOWN; the others are what a vanished peer or object path produces.
    private static let staleDBusErrors: Set<Int32> = [
        G_DBUS_ERROR_SERVICE_UNKNOWN, G_DBUS_ERROR_NAME_HAS_NO_OWNER, G_DBUS_ERROR_DISCONNECTED,
        G_DBUS_ERROR_UNKNOWN_OBJECT, G_DBUS_ERROR_UNKNOWN_INTERFACE, G_DBUS_ERROR_UNKNOWN_METHOD,
        // gnome-keyring's answer to a secret sent under a session it cannot decrypt with: one
        // negotiated with a daemon that was replaced between our owner check and the call.
        G_DBUS_ERROR_INVALID_ARGS,
    ].reduce(into: []) { $0.insert(Int32($1.rawValue)) }  // conversion: C enum constants
}
