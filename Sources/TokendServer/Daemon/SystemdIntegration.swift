import TokendCore
import TokendProtocol
#if canImport(Glibc)
import Glibc
#endif

/// The pieces of the systemd protocol the daemon needs, without linking libsystemd: readiness,
/// status and watchdog notification (sd_notify(3)) and socket activation (sd_listen_fds(3)).
/// Hand-written because each is a few lines over a datagram socket and the environment, and
/// libsystemd would be one more shared library to load (and to trust) for every user.
public enum SystemdIntegration {
    /// sd_listen_fds(3): the first passed descriptor is 3.
    static let firstListenDescriptor: CInt = 3
    /// The name `tokend.socket` gives its socket (`FileDescriptorName=`), so that a unit passing
    /// more descriptors, or a socket meant for someone else, is never adopted by position.
    public static let socketName = "tokend"

    /// Sends `state` (e.g. "READY=1") to `$NOTIFY_SOCKET` if systemd set one; silent otherwise.
    public static func notify(_ state: String, environment: [String: String]) {
        guard let path = environment["NOTIFY_SOCKET"], !path.isEmpty else { return }
        // "@name" is an abstract socket: a NUL byte, then the name.
        let target = path.hasPrefix("@") ? UnixSocketAddress(abstractName: String(path.dropFirst())) : UnixSocketAddress(path: path)
        guard let address = target else { return }
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)  // conversion: C constants
        guard fd >= 0 else { return }
        defer { close(fd) }
        _ = state.withCString { message in
            address.withSockaddr { sendto(fd, message, strlen(message), 0, $0, $1) }
        }
    }

    /// `RELOADING=1` with the `MONOTONIC_USEC=` that systemd ≥ 253 wants for `Type=notify-reload`
    /// and that older versions ignore.
    public static func reloadingMessage() -> String {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return "RELOADING=1\nMONOTONIC_USEC=\(UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1000)"  // conversion: CLOCK_MONOTONIC is never negative
    }

    /// How often to send `WATCHDOG=1`, in seconds: half of `WATCHDOG_USEC` (sd_watchdog_enabled(3)'s
    /// advice), or nil when systemd runs no watchdog for this very process.
    public static func watchdogInterval(environment: [String: String]) -> Double? {
        guard let usec = environment["WATCHDOG_USEC"].flatMap({ UInt64($0) }), usec > 0 else { return nil }  // conversion: a failable parse of a String
        if let pid = environment["WATCHDOG_PID"].flatMap({ Int32($0) }), pid != getpid() { return nil }  // conversion: a failable parse of a String
        return Double(usec / 2) / 1_000_000  // conversion: UInt64 to Double never traps
    }

    /// The listening socket systemd passed to this very process, checked before it is trusted:
    /// named `tokend` (or the only one passed, unnamed), a listening `AF_UNIX` stream socket
    /// bound to a path that is ours and not wider than 0600. Nil when nothing was passed; an
    /// error when something was passed that must not be served. The variables are removed so
    /// that no child inherits them.
    public static func activatedDescriptor(environment: [String: String]) throws(DaemonError) -> CInt? {
        defer {
            unsetenv("LISTEN_PID")
            unsetenv("LISTEN_FDS")
            unsetenv("LISTEN_FDNAMES")
        }
        guard let pid = environment["LISTEN_PID"].flatMap({ Int32($0) }), pid == getpid(),  // conversion: a failable parse of a String
            let count = environment["LISTEN_FDS"].flatMap({ Int($0) }), count >= 1  // conversion: a failable parse of a String
        else { return nil }
        let descriptor: CInt
        if let names = environment["LISTEN_FDNAMES"]?.split(separator: ":", omittingEmptySubsequences: false).map(String.init),
            names != ["unknown"]
        {
            guard let index = names.firstIndex(of: socketName), index < count else {
                throw refusal("systemd passed sockets named \(names.joined(separator: ", ")) but none named \"\(socketName)\" (FileDescriptorName=\(socketName) in tokend.socket)")
            }
            descriptor = firstListenDescriptor + CInt(index)
        } else {
            guard count == 1 else { throw refusal("systemd passed \(count) unnamed sockets; give tokend's FileDescriptorName=\(socketName)") }
            descriptor = firstListenDescriptor
        }
        try checkListeningSocket(descriptor)
        return descriptor
    }

    /// The consumer sockets systemd passed to this very process, by consumer name: each named
    /// `consumer-NAME` (`FileDescriptorName=` in a .socket unit of its own) and checked as the
    /// main one is. Read from `environment`, which `activatedDescriptor` leaves as it was.
    public static func activatedConsumerDescriptors(environment: [String: String]) throws(DaemonError) -> [String: CInt] {
        guard let pid = environment["LISTEN_PID"].flatMap({ Int32($0) }), pid == getpid(),  // conversion: a failable parse of a String
            let count = environment["LISTEN_FDS"].flatMap({ Int($0) }), count >= 1,  // conversion: a failable parse of a String
            let names = environment["LISTEN_FDNAMES"]?.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        else { return [:] }
        let prefix = "consumer-"
        var descriptors: [String: CInt] = [:]
        // At most the passed count: a longer list of names is systemd's, not more descriptors.
        for (index, name) in names.prefix(count).enumerated() where name.hasPrefix(prefix) && name.count > prefix.count {
            let descriptor = firstListenDescriptor + CInt(index)  // conversion: index < count, a handful
            try checkListeningSocket(descriptor)
            descriptors[String(name.dropFirst(prefix.count))] = descriptor
        }
        return descriptors
    }

    /// Refuses any descriptor but a listening Unix stream socket on a path that only we can use.
    static func checkListeningSocket(_ descriptor: CInt) throws(DaemonError) {
        guard integerOption(descriptor, SO_DOMAIN) == AF_UNIX else { throw refusal("the passed descriptor \(descriptor) is not a Unix socket") }
        guard integerOption(descriptor, SO_TYPE) == CInt(SOCK_STREAM.rawValue) else {
            throw refusal("the passed descriptor \(descriptor) is not a stream socket (ListenStream= in tokend.socket)")
        }
        guard integerOption(descriptor, SO_ACCEPTCONN) == 1 else { throw refusal("the passed descriptor \(descriptor) is not listening") }
        guard let path = boundPath(descriptor) else { throw refusal("the passed socket is not bound to a file path") }
        var info = stat()
        guard stat(path, &info) == 0 else { throw refusal("the passed socket's path \(path) is gone: \(String(cString: strerror(errno)))") }
        guard info.st_uid == getuid() else { throw refusal("the passed socket \(path) belongs to uid \(info.st_uid), not to us") }
        guard info.st_mode & 0o177 == 0 else {
            throw refusal("the passed socket \(path) has mode \(String(info.st_mode & 0o777, radix: 8)); it must be 0600 (SocketMode=0600 in tokend.socket)")
        }
    }

    static func refusal(_ reason: String) -> DaemonError {
        DaemonError(code: .socket, description: "refusing the socket systemd passed: \(reason)")
    }

    static func integerOption(_ descriptor: CInt, _ option: CInt) -> CInt? {
        var value: CInt = 0
        var length = socklen_t(MemoryLayout<CInt>.size)
        return getsockopt(descriptor, SOL_SOCKET, option, &value, &length) == 0 ? value : nil
    }

    /// The file path a Unix socket is bound to; nil for an unbound or abstract socket.
    static func boundPath(_ descriptor: CInt) -> String? {
        var address = sockaddr_un()
        var length = socklen_t(MemoryLayout<sockaddr_un>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        guard named == 0, address.sun_family == sa_family_t(AF_UNIX) else { return nil }
        let path = withUnsafeBytes(of: address.sun_path) { raw in
            String(decoding: raw.prefix(max(0, Int(length) - MemoryLayout<sa_family_t>.size)).prefix { $0 != 0 }, as: UTF8.self)  // conversion: widening socklen_t
        }
        return path.isEmpty ? nil : path
    }
}
