import TokendCore
#if canImport(Glibc)
import Glibc
#endif

/// Where the daemon listens (docs/architecture.md, "Names and places"): `--socket`, else `TOKEND_SOCKET`, else
/// `$XDG_RUNTIME_DIR/tokend/tokend.sock`. Daemon and client resolve it the same way.
public enum SocketPath {
    public static let environmentVariable = "TOKEND_SOCKET"
    /// sockaddr_un's sun_path is 108 bytes including the NUL: a longer path cannot be bound.
    public static let maximumLength = 107

    public struct Unresolvable: Error, CustomStringConvertible {
        public let description: String
    }

    public static func resolve(explicit: String? = nil, environment: Environment) throws(Unresolvable) -> String {
        let path: String
        if let explicit, !explicit.isEmpty {
            path = explicit
        } else if let fromEnvironment = environment[environmentVariable], !fromEnvironment.isEmpty {
            path = fromEnvironment
        } else if let runtime = environment["XDG_RUNTIME_DIR"], !runtime.isEmpty {
            path = runtime + "/tokend/tokend.sock"
        } else {
            throw Unresolvable(
                description: "XDG_RUNTIME_DIR is not set, so the socket path is unknown: set it (a login session does) or pass --socket PATH / TOKEND_SOCKET")
        }
        guard path.utf8.count <= maximumLength else {
            throw Unresolvable(description: "socket path is longer than \(maximumLength) bytes, which Unix sockets cannot bind: \(path)")
        }
        return path
    }
}
