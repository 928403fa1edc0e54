// Connections/ — the Unix socket: the listener (its directory checks, peer uid, connection cap),
// line framing, the connection served on its event loop (`ConnectionHandler`) and the request
// handler that decodes a line into a `Command` and hands it to Handlers/. It calls the engine only
// through Commands/' service protocols.

import CTokendShims
import Logging
import NIOCore
import NIOPosix
import Synchronization
import TokendCore
import TokendProtocol
#if canImport(Glibc)
import Glibc
#endif

/// Errors that stop the daemon from listening.
public struct ListenerError: Error, Sendable, CustomStringConvertible {
    public enum Code: Sendable { case alreadyRunning, unsafeDirectory, bindFailed }
    public var code: Code
    public var description: String
}

/// The Unix-socket front of the daemon (docs/protocol.md): checks each peer's uid with SO_PEERCRED
/// before a byte is read, frames JSON Lines, and writes whatever the `RequestHandler` replies.
public final class SocketListener: Sendable {
    /// Connections beyond this get one `unavailable` line and are closed, so a flood cannot
    /// exhaust descriptors that the keyring and HTTP clients need. 1024 is far above any real
    /// number of local clients.
    public static let maximumConnections = 1024

    let handler: RequestHandler
    let logger: Logger
    let lineTimeLimits: LineTimeLimits
    let uid = getuid()
    /// Connections accepted and not yet closed, entered as they are accepted, so their count is
    /// the one the cap checks and a burst of connections cannot slip past it.
    let openConnections = Mutex<[ObjectIdentifier: any Channel]>([:])
    let server = Mutex<(any Channel)?>(nil)
    /// Told of every connection accepted (the daemon's `IdleMemory`).
    let onConnection: @Sendable () -> Void

    public init(handler: RequestHandler, logger: Logger, lineTimeLimits: LineTimeLimits = .standard, onConnection: @escaping @Sendable () -> Void = {}) {
        self.handler = handler
        self.logger = logger
        self.lineTimeLimits = lineTimeLimits
        self.onConnection = onConnection
    }

    /// Makes the socket's directory (0700, ours) and clears a stale socket: removed only when
    /// nothing answers on it. Refuses when another tokend answers. A directory that was already
    /// there (`--socket ~/tokend.sock` puts the socket in `$HOME`) is never chmod'ed: it must be
    /// ours and writable by no one else, or the socket could be replaced under its clients.
    public static func prepare(path: String) throws(ListenerError) {
        let directory = String(path[..<(path.lastIndex(of: "/") ?? path.startIndex)])
        if !directory.isEmpty {
            let made = mkdir(directory, 0o700) == 0
            if !made && errno != EEXIST {
                throw ListenerError(code: .unsafeDirectory, description: "cannot create \(directory): \(String(cString: strerror(errno)))")
            }
            var info = stat()
            guard lstat(directory, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR else {
                throw ListenerError(code: .unsafeDirectory, description: "\(directory) is not a directory")
            }
            guard info.st_uid == getuid() else {
                throw ListenerError(code: .unsafeDirectory, description: "\(directory) belongs to uid \(info.st_uid), not to us; put the socket in a directory of your own (--socket)")
            }
            if made {
                chmod(directory, 0o700)  // mkdir's mode went through the umask; make it exact
            } else if info.st_mode & 0o022 != 0 {
                throw ListenerError(
                    code: .unsafeDirectory,
                    description: "\(directory) is writable by others (mode \(String(info.st_mode & 0o7777, radix: 8))), so the socket could be replaced; run chmod go-w on it or choose another --socket")
            }
        }
        var info = stat()
        guard lstat(path, &info) == 0 else { return }
        guard (info.st_mode & S_IFMT) == S_IFSOCK else {
            throw ListenerError(code: .bindFailed, description: "\(path) exists and is not a socket; remove it or choose another --socket")
        }
        if (try? BlockingClient(path: path)) != nil {
            throw ListenerError(code: .alreadyRunning, description: "another tokend is already serving \(path)")
        }
        unlink(path)
    }

    /// Binds `path` (socket 0600) or adopts a socket-activated descriptor, then serves until
    /// `stop()` is called. Every connection lives on one event loop, the listener's: a connection
    /// handed to another thread costs a wake-up per connection (docs/architecture.md).
    public func run(path: String, activatedDescriptor: CInt?, onListening: @Sendable () -> Void = {}) async throws {
        let uid = self.uid
        let logger = self.logger
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let bootstrap = ServerBootstrap(group: loop, childGroup: loop)
            .serverChannelOption(.backlog, value: 256)
            // `echo '{"op":"hello"}' | socat - UNIX-CONNECT:…` half-closes after its line: the
            // reply must still go out, so EOF ends reading, not the connection.
            .childChannelOption(.allowRemoteHalfClosure, value: true)
            .childChannelInitializer { [self] channel in
                Self.credentials(of: channel).flatMapThrowing { credentials in
                    guard credentials.uid == uid else {
                        logger.warning("refused a client of another user", metadata: ["uid": "\(credentials.uid)", "pid": "\(credentials.pid)"])
                        throw ListenerError(code: .bindFailed, description: "peer uid \(credentials.uid) refused")
                    }
                    self.onConnection()
                    let key = ObjectIdentifier(channel)
                    let open = self.openConnections.withLock { connections in
                        connections[key] = channel
                        return connections.count
                    }
                    channel.closeFuture.whenComplete { _ in self.openConnections.withLock { _ = $0.removeValue(forKey: key) } }
                    if open <= Self.maximumConnections {
                        try channel.pipeline.syncOperations.addHandlers(LineFrameHandler(limits: self.lineTimeLimits), ConnectionHandler(self.handler))
                    } else {
                        logger.warning("too many connections; refusing a new one", metadata: ["open": "\(open - 1)"])
                        // Not a failed initializer: NIO would close the channel before it is
                        // active, and the refusal could not be written.
                        try channel.pipeline.syncOperations.addHandler(OverCapRefusal())
                    }
                }.flatMapError { error in
                    // NIO leaves a channel whose initializer failed open: without this, a refused
                    // peer keeps its descriptor (and its client waits) until it hangs up itself.
                    channel.close(promise: nil)
                    return channel.eventLoop.makeFailedFuture(error)
                }
            }
        let listener: any Channel
        if let activatedDescriptor {
            listener = try await bootstrap.withBoundSocket(activatedDescriptor).get()
        } else {
            // umask for the bind, so the socket is never, even briefly, wider than 0600.
            let previous = umask(0o177)
            defer { umask(previous) }
            listener = try await bootstrap.bind(unixDomainSocketPath: path).get()
            chmod(path, 0o600)
        }
        server.withLock { $0 = listener }
        onListening()
        try await listener.closeFuture.get()
        // Returns once every connection has closed too (`stop()` ends them within `closingGrace`):
        // a reply still going out must not be cut off by the process exiting.
        for connection in openConnections.withLock({ Array($0.values) }) {
            try? await connection.closeFuture.get()
        }
    }

    /// How long a connection may take to answer its request in flight once the daemon stops:
    /// the engine releases every waiting request at once ("tokend is shutting down"), so this
    /// only bounds a connection that is stuck, or a stream that does not end by itself.
    static let closingGrace: TimeAmount = .seconds(2)

    /// Stops accepting and lets each connection finish (graceful shutdown): its input is closed,
    /// so no new request is read, and the request in flight still gets its answer before the
    /// connection closes. Whatever is still open after `closingGrace` is closed.
    public func stop() {
        server.withLock { $0 }?.close(promise: nil)
        for channel in openConnections.withLock({ Array($0.values) }) { channel.close(mode: .input, promise: nil) }
        MultiThreadedEventLoopGroup.singleton.any().scheduleTask(in: Self.closingGrace) { [self] in
            for channel in openConnections.withLock({ Array($0.values) }) { channel.close(promise: nil) }
        }
    }

    static func credentials(of channel: any Channel) -> EventLoopFuture<tokend_peer_credentials> {
        guard let provider = channel as? any SocketOptionProvider else {
            return channel.eventLoop.makeFailedFuture(ListenerError(code: .bindFailed, description: "no socket options"))
        }
        return provider.unsafeGetSocketOption(level: SocketOptionLevel(SOL_SOCKET), name: SocketOptionName(tokend_so_peercred()))
    }
}

/// Stands in for the line framer on a connection over `SocketListener.maximumConnections`: one
/// line saying why, then the close. The client learns what happened (tokenctl exits 75, try
/// again) instead of reading a bare end of file. The close waits for the client's first bytes
/// (or its end of input): closing first could fail the client's write of its request before it
/// ever reads the refusal.
final class OverCapRefusal: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// How long a silent client over the cap keeps its descriptor: enough for any client to
    /// send its first line, short enough that a flood cannot pile descriptors up.
    static let graceForTheRequest: TimeAmount = .seconds(5)

    private var closing: Scheduled<Void>?

    func channelActive(context: ChannelHandlerContext) {
        let refusal = TokendError(
            .unavailable, "tokend serves at most \(SocketListener.maximumConnections) connections at once; try again when one closes")
        context.writeAndFlush(wrapOutboundOut(ByteBuffer(bytes: WireCoding.encodeLine(Response.failure(refusal)))), promise: nil)
        closing = context.eventLoop.assumeIsolated().scheduleTask(in: Self.graceForTheRequest) { context.close(promise: nil) }
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        context.close(promise: nil)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .some(.inputClosed) = event as? ChannelEvent { context.close(promise: nil) }
    }

    func channelInactive(context: ChannelHandlerContext) {
        closing?.cancel()
        context.fireChannelInactive()
    }
}
