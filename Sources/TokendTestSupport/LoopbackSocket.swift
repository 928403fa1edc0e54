import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Plain TCP clients of a loopback port, for tests that play a browser or an attacker at the
/// redirect listener.
public enum LoopbackSocket {
    /// A connected socket to 127.0.0.1:`port`: non-blocking, or blocking with a 20-second
    /// receive timeout (a test must not hang on a listener that never answers).
    public static func connect(port: Int, nonBlocking: Bool = false) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)  // conversion: a C constant
        let connected = withLoopback(port: port) { Glibc.connect(fd, $0, $1) }
        guard connected == 0 else {
            close(fd)
            throw POSIXError(.ECONNREFUSED)
        }
        if nonBlocking {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        } else {
            var timeout = timeval(tv_sec: 20, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        }
        return fd
    }

    /// Sends `request` (raw bytes of HTTP) to 127.0.0.1:`port` and returns the raw answer, read
    /// until the server closes the connection.
    public static func exchange(port: Int, _ request: String) throws -> String {
        let fd = try connect(port: port)
        defer { close(fd) }
        let bytes = Array(request.utf8)
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count <= 0 { break }
            answer += buffer[0..<count]
        }
        return String(decoding: answer, as: UTF8.self)
    }

    /// A socket listening on 127.0.0.1, on a port the kernel picked; the caller closes it.
    public static func listen(backlog: Int32 = 4) throws -> (fd: Int32, port: Int) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)  // conversion: a C constant
        let bound = withLoopback(port: 0) { bind(fd, $0, $1) }
        guard fd >= 0, bound == 0, Glibc.listen(fd, backlog) == 0, let local = try? localAddress(of: fd) else {
            close(fd)
            throw POSIXError(.EADDRNOTAVAIL)
        }
        return (fd, Int(UInt16(bigEndian: local.sin_port)))  // conversion: a UInt16 always fits an Int
    }

    /// 127.0.0.1:`port` (0: any) as a `sockaddr` and its length, for `connect` and `bind`.
    private static func withLoopback(port: Int, _ body: (UnsafePointer<sockaddr>, socklen_t) -> Int32) -> Int32 {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(clamping: port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
    }

    /// The address a socket is bound to (`getsockname`).
    public static func localAddress(of fd: Int32) throws -> sockaddr_in {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        guard named == 0 else { throw POSIXError(.EBADF) }
        return address
    }
}
