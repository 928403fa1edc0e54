import TokendCore
#if canImport(Glibc)
import Glibc
#endif

/// A small blocking client for the daemon's socket: what tokenctl uses. Plain POSIX calls, no
/// event loop, so a `tokenctl token` costs one connect, one write and one read.
public final class BlockingClient {
    public struct Failure: Error, CustomStringConvertible {
        public enum Code: Sendable { case notReachable, timedOut, closed, protocolError }
        public var code: Code
        public var description: String
    }

    private let fd: Int32
    /// The raw descriptor, for tests that must send bytes no well-behaved client would.
    public var descriptor: Int32? { fd }
    private var framer = LineFramer()
    public let path: String

    /// Connects, or fails with `.notReachable` when nothing listens at `path`.
    public init(path: String) throws(Failure) {
        self.path = path
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw Failure(code: .notReachable, description: "cannot create a socket: \(Self.errnoText())") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        // Failure paths below do not close `fd`: once every stored property is set, a throwing
        // class initializer still runs `deinit`, which closes it. Closing here too would close a
        // descriptor number that another thread may already have been handed again.
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            throw Failure(code: .notReachable, description: "socket path too long: \(path)")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard result == 0 else {
            throw Failure(code: .notReachable, description: "tokend is not reachable at \(path) (\(Self.errnoText()))")
        }
    }

    deinit {
        if fd >= 0 { close(fd) }
    }

    /// Bounds every read, so a stuck daemon cannot hang a shell script forever. Zero: no bound.
    public func setReadTimeout(seconds: Double) {
        var value = timeval(tv_sec: Int(seconds), tv_usec: Int((seconds - seconds.rounded(.down)) * 1_000_000))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &value, socklen_t(MemoryLayout<timeval>.size))
    }

    public func send(_ request: Request) throws(Failure) {
        let line = WireCoding.encodeLine(request)
        var offset = 0
        while offset < line.count {
            let written = line[offset...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if written < 0 {
                if errno == EINTR { continue }
                throw Failure(code: .closed, description: "tokend closed the connection: \(Self.errnoText())")
            }
            offset += written
        }
    }

    /// The next line from the daemon, decoded as `Value`.
    public func receive<Value: Decodable>(_ type: Value.Type = Response.self) throws(Failure) -> Value {
        let line = try receiveLine()
        do {
            return try JSONDecoder().decode(Value.self, from: Data(line))
        } catch {
            throw Failure(code: .protocolError, description: "tokend sent a line this tokenctl cannot read; are both the same version?")
        }
    }

    public func receiveLine() throws(Failure) -> [UInt8] {
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            do {
                if let line = try framer.nextLine() { return line }
            } catch {
                throw Failure(code: .protocolError, description: "tokend sent a line longer than \(LineFramer.maximumLineLength) bytes")
            }
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count > 0 {
                framer.append(chunk[0..<count])
            } else if count == 0 {
                throw Failure(code: .closed, description: "tokend closed the connection before answering")
            } else if errno == EAGAIN || errno == EWOULDBLOCK {
                throw Failure(code: .timedOut, description: "tokend did not answer in time")
            } else if errno != EINTR {
                throw Failure(code: .closed, description: "reading from tokend failed: \(Self.errnoText())")
            }
        }
    }

    /// One request, one response.
    public func call(_ request: Request) throws(Failure) -> Response {
        try send(request)
        return try receive(Response.self)
    }

    static func errnoText() -> String { String(cString: strerror(errno)) }
}
