#if canImport(Glibc)
import Glibc
#endif

/// A Unix-socket address: a filesystem path (the client's `connect`, the daemon's `bind`) or a
/// Linux abstract name (systemd's `$NOTIFY_SOCKET` may be one).
public struct UnixSocketAddress {
    var storage = sockaddr_un()
    /// The length the socket calls take: the whole structure for a path (NUL-terminated), only
    /// the bytes used for an abstract name, whose every byte counts.
    let length: socklen_t

    /// Nil when `path` does not fit `sun_path` (107 bytes and its terminating NUL).
    public init?(path: String) {
        guard Self.fill(&storage, with: Array(path.utf8), at: 0, terminated: true) != nil else { return nil }
        length = socklen_t(MemoryLayout<sockaddr_un>.size)
    }

    /// The abstract socket `name` (without the leading NUL byte that marks it); nil when it does
    /// not fit `sun_path`.
    public init?(abstractName name: String) {
        guard let used = Self.fill(&storage, with: Array(name.utf8), at: 1, terminated: false) else { return nil }
        length = socklen_t(MemoryLayout<sa_family_t>.size + used)  // conversion: at most 108
    }

    /// Writes `bytes` into the zeroed `sun_path` from `offset`, with room for a terminating NUL
    /// after them when `terminated`; the bytes of `sun_path` used, or nil when they do not fit.
    private static func fill(_ storage: inout sockaddr_un, with bytes: [UInt8], at offset: Int, terminated: Bool) -> Int? {
        storage.sun_family = sa_family_t(AF_UNIX)
        guard offset + bytes.count + (terminated ? 1 : 0) <= MemoryLayout.size(ofValue: storage.sun_path) else { return nil }
        withUnsafeMutableBytes(of: &storage.sun_path) { raw in
            raw.baseAddress!.advanced(by: offset).copyMemory(from: bytes, byteCount: bytes.count)
        }
        return offset + bytes.count
    }

    /// Calls `body` with the address as the socket calls take it.
    public func withSockaddr<Result>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> Result) -> Result {
        withUnsafePointer(to: storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, length) }
        }
    }
}
