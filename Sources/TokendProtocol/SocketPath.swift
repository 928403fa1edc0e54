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

    public static func resolve(explicit: String? = nil, environment: [String: String]) throws(Unresolvable) -> String {
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

    /// The process environment as a dictionary, without Foundation's ProcessInfo. Split on the
    /// bytes: walking each entry as Characters (grapheme breaking) cost tokenctl 0.6 M
    /// instructions, an eighth of a `tokenctl token` call.
    /// Only the variables `names`, for a caller that knows what it reads: the whole environment
    /// as a dictionary cost `tokenctl token` 0.3 M instructions, half of what is left of a call.
    public static func processEnvironment(only names: [String]) -> [String: String] {
        var result: [String: String] = [:]
        for name in names {
            if let value = getenv(name) { result[name] = String(cString: value) }
        }
        return result
    }

    public static func processEnvironment() -> [String: String] {
        var result: [String: String] = [:]
        var cursor = environ
        while let entry = cursor.pointee {
            let length = strlen(entry)
            entry.withMemoryRebound(to: UInt8.self, capacity: length) { start in
                let bytes = UnsafeBufferPointer(start: start, count: length)
                if let equals = bytes.firstIndex(of: UInt8(ascii: "=")) {
                    let name = String(decoding: UnsafeBufferPointer(rebasing: bytes[..<equals]), as: UTF8.self)
                    result[name] = String(decoding: UnsafeBufferPointer(rebasing: bytes[(equals + 1)...]), as: UTF8.self)
                }
            }
            cursor += 1
        }
        return result
    }
}
