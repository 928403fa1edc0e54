import TokendCore
#if canImport(Glibc)
import Glibc
#endif

/// The two pieces of the systemd protocol the daemon needs, without linking libsystemd:
/// readiness notification (sd_notify(3)) and socket activation (sd_listen_fds(3)).
public enum SystemdIntegration {
    /// sd_listen_fds(3): the first passed descriptor is 3.
    static let firstListenDescriptor: CInt = 3

    /// Sends `state` (e.g. "READY=1") to `$NOTIFY_SOCKET` if systemd set one; silent otherwise.
    public static func notify(_ state: String, environment: [String: String]) {
        guard var path = environment["NOTIFY_SOCKET"], !path.isEmpty else { return }
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return }
        defer { close(fd) }
        let abstract = path.hasPrefix("@")
        if abstract { path.removeFirst() }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return }
        let offset = abstract ? 1 : 0  // abstract sockets start with a NUL byte
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            if abstract {
                for index in stride(from: bytes.count, to: 0, by: -1) { raw[index] = raw[index - 1] }
                raw[0] = 0
            }
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + offset)
        _ = state.withCString { message in
            withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(fd, message, strlen(message), 0, $0, length)
                }
            }
        }
    }

    /// The listening socket systemd passed us, if it passed one to this very process.
    /// The variables are removed so that no child inherits them.
    public static func activatedDescriptor(environment: [String: String]) -> CInt? {
        defer {
            unsetenv("LISTEN_PID")
            unsetenv("LISTEN_FDS")
            unsetenv("LISTEN_FDNAMES")
        }
        guard let pid = environment["LISTEN_PID"].flatMap({ Int32($0) }), pid == getpid(),
            let count = environment["LISTEN_FDS"].flatMap({ Int($0) }), count >= 1
        else { return nil }
        return firstListenDescriptor
    }
}
