import CTokendShims
import TokendCore
#if canImport(Glibc)
import Glibc
#endif

/// A small blocking client for the daemon's socket: what tokenctl uses. Plain POSIX calls, no
/// event loop, so a `tokenctl token` costs one connect, one write and one read.
public final class BlockingClient {
    public struct Failure: Error, CustomStringConvertible {
        public enum Code: Sendable { case notReachable, timedOut, closed, protocolError, foreignServer }
        public var code: Code
        public var description: String
    }

    private let fd: Int32
    /// The raw descriptor, for tests that must send bytes no well-behaved client would.
    public var descriptor: Int32? { fd }
    /// The longest reply line read: far above anything the daemon sends (a `status` line is at
    /// most ~2 KiB per account, provider text being cut to 512 B), so `status` and `list` work for
    /// any number of accounts a configuration can sensibly hold, while a runaway peer is still cut.
    public static let maximumReplyLength = 64 * 1024 * 1024
    private var framer = LineFramer(maximumLineLength: BlockingClient.maximumReplyLength)
    public let path: String

    /// How long a connect may wait for room in the daemon's backlog when the caller names no
    /// bound: a daemon that stopped accepting must not hang a shell script.
    public static let defaultConnectTimeout: Double = 10

    /// Connects, or fails with `.notReachable` when nothing listens at `path`, `.timedOut` when
    /// the daemon does not accept within `connectTimeout` seconds, and `.foreignServer` when the
    /// socket is served by another user's process (nothing is sent to it, secrets least of all).
    public init(path: String, connectTimeout: Double = BlockingClient.defaultConnectTimeout) throws(Failure) {
        self.path = path
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)  // conversion: C constants
        guard fd >= 0 else { throw Failure(code: .notReachable, description: "cannot create a socket: \(Self.errnoText())") }
        // Failure paths below do not close `fd`: once every stored property is set, a throwing
        // class initializer still runs `deinit`, which closes it. Closing here too would close a
        // descriptor number that another thread may already have been handed again.
        guard let address = UnixSocketAddress(path: path) else {
            throw Failure(code: .notReachable, description: "socket path too long: \(path)")
        }
        // A Unix-socket connect waits for room in a full backlog up to the send timeout.
        Self.setTimeout(fd, SO_SNDTIMEO, seconds: connectTimeout)
        var result: Int32
        repeat {
            result = address.withSockaddr { connect(fd, $0, $1) }
        } while result != 0 && errno == EINTR
        guard result == 0 else {
            if errno == EAGAIN || errno == EWOULDBLOCK {
                throw Failure(code: .timedOut, description: "tokend at \(path) did not accept the connection in time")
            }
            throw Failure(code: .notReachable, description: "tokend is not reachable at \(path) (\(Self.errnoText()))")
        }
        Self.setTimeout(fd, SO_SNDTIMEO, seconds: 0)
        var peer = tokend_peer_credentials()
        guard tokend_peer_credentials_of(fd, &peer) == 0 else {
            throw Failure(code: .notReachable, description: "cannot tell who serves \(path) (\(Self.errnoText()))")
        }
        guard peer.uid == getuid() else {
            throw Failure(code: .foreignServer, description: "the socket at \(path) is served by uid \(peer.uid), not by you; nothing was sent")
        }
    }

    private static func setTimeout(_ fd: Int32, _ option: Int32, seconds: Double) {
        let seconds = max(0, min(seconds, 86_400))
        var value = timeval(tv_sec: Int(saturating: seconds), tv_usec: Int(saturating: (seconds - seconds.rounded(.down)) * 1_000_000))
        setsockopt(fd, SOL_SOCKET, option, &value, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit {
        if fd >= 0 { close(fd) }
    }

    /// Bounds every read, so a stuck daemon cannot hang a shell script forever. Zero: no bound.
    public func setReadTimeout(seconds: Double) {
        Self.setTimeout(fd, SO_RCVTIMEO, seconds: seconds)
    }

    /// Sends `command` under `id`: what tokenctl and the credential helpers send.
    public func send(_ command: Command, id: RequestID?) throws(Failure) {
        try send(line: command.line(id: id))
    }

    /// Sends a line as it is, a request or not: tests' hostile and hand-made lines.
    public func send(line: [UInt8]) throws(Failure) {
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
            throw Failure(code: .protocolError, description: Self.unreadableLine)
        }
    }

    private static let unreadableLine = "tokend sent a line this tokenctl cannot read; are both the same version?"

    public func receiveLine() throws(Failure) -> [UInt8] {
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            do {
                if let line = try framer.nextLine() { return line }
            } catch {
                throw Failure(code: .protocolError, description: "tokend sent a line longer than \(Self.maximumReplyLength) bytes")
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
    public func call(_ command: Command, id: RequestID? = nil) throws(Failure) -> Response {
        try send(command, id: id)
        let line = try receiveLine()
        if let token = TokenExchangeCoding.reply(line) { return token }
        do {
            return try JSONDecoder().decode(Response.self, from: Data(line))
        } catch {
            throw Failure(code: .protocolError, description: Self.unreadableLine)
        }
    }

    static func errnoText() -> String { String(cString: strerror(errno)) }
}
