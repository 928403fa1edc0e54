// Connections/ — the Unix socket: the listener (its directory checks, peer uid, connection cap),
// line framing, the event-loop fast path for held tokens (`HeldTokenHandler`) and the request
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
    let openConnections = Mutex<[ObjectIdentifier: any Channel]>([:])
    /// Connections accepted and not yet closed, counted when accepted (not when their serving
    /// task starts), so a burst of connections cannot slip past the cap.
    let acceptedConnections = Atomic<Int>(0)
    let server = Mutex<(any Channel)?>(nil)

    public init(handler: RequestHandler, logger: Logger, lineTimeLimits: LineTimeLimits = .standard) {
        self.handler = handler
        self.logger = logger
        self.lineTimeLimits = lineTimeLimits
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
    /// `stop()` is called.
    public func run(path: String, activatedDescriptor: CInt?, onListening: @Sendable () -> Void = {}) async throws {
        let uid = self.uid
        let logger = self.logger
        let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 256)
            // `echo '{"op":"hello"}' | socat - UNIX-CONNECT:…` half-closes after its line: the
            // reply must still go out, so EOF ends reading, not the connection.
            .childChannelOption(.allowRemoteHalfClosure, value: true)
        let lineTimeLimits = self.lineTimeLimits
        let initializer: @Sendable (any Channel) -> EventLoopFuture<NIOAsyncChannel<LineFrame, ByteBuffer>> = { [self] channel in
            Self.credentials(of: channel).flatMapThrowing { credentials in
                guard credentials.uid == uid else {
                    logger.warning("refused a client of another user", metadata: ["uid": "\(credentials.uid)", "pid": "\(credentials.pid)"])
                    throw ListenerError(code: .bindFailed, description: "peer uid \(credentials.uid) refused")
                }
                let open = self.acceptedConnections.add(1, ordering: .relaxed).newValue
                channel.closeFuture.whenComplete { _ in self.acceptedConnections.subtract(1, ordering: .relaxed) }
                if open <= Self.maximumConnections {
                    try channel.pipeline.syncOperations.addHandlers(LineFrameHandler(limits: lineTimeLimits), HeldTokenHandler(self.handler))
                } else {
                    logger.warning("too many connections; refusing a new one", metadata: ["open": "\(open - 1)"])
                    // Not a failed initializer: NIO would close the channel before it is active,
                    // and the refusal could not be written.
                    try channel.pipeline.syncOperations.addHandler(OverCapRefusal())
                }
                return try NIOAsyncChannel<LineFrame, ByteBuffer>(wrappingChannelSynchronously: channel)
            }.flatMapError { error in
                // NIO leaves a channel whose initializer failed open: without this, a refused
                // peer keeps its descriptor (and its client waits) until it hangs up itself.
                channel.close(promise: nil)
                return channel.eventLoop.makeFailedFuture(error)
            }
        }
        let listener: NIOAsyncChannel<NIOAsyncChannel<LineFrame, ByteBuffer>, Never>
        if let activatedDescriptor {
            listener = try await bootstrap.bind(activatedDescriptor, childChannelInitializer: initializer)
        } else {
            // umask for the bind, so the socket is never, even briefly, wider than 0600.
            let previous = umask(0o177)
            defer { umask(previous) }
            listener = try await bootstrap.bind(unixDomainSocketPath: path, childChannelInitializer: initializer)
            chmod(path, 0o600)
        }
        server.withLock { $0 = listener.channel }
        onListening()
        try await withThrowingDiscardingTaskGroup { group in
            try await listener.executeThenClose { inbound in
                for try await connection in inbound {
                    group.addTask { await self.serve(connection) }
                }
            }
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

    /// One connection: requests answered in order; after `watch` or `login`, the stream until it
    /// ends or the client leaves.
    func serve(_ connection: NIOAsyncChannel<LineFrame, ByteBuffer>) async {
        let key = ObjectIdentifier(connection.channel)
        openConnections.withLock { $0[key] = connection.channel }
        defer { openConnections.withLock { _ = $0.removeValue(forKey: key) } }
        do {
            try await connection.executeThenClose { inbound, outbound in
                var lines = inbound.makeAsyncIterator()
                while let frame = try await lines.next() {
                    let line: [UInt8]
                    switch frame {
                    case .line(let bytes): line = bytes
                    case .tooLarge, .emptyLineFlood:
                        let refusal = frame == .tooLarge
                            ? TokendError(.tooLarge, "a request line may be at most \(LineFramer.maximumLineLength) bytes; closing")
                            : TokendError(.badRequest, "more than \(LineFrameHandler.maximumEmptyLinesInARow) empty lines in a row; closing")
                        try await outbound.write(ByteBuffer(bytes: WireCoding.encodeLine(Response.failure(refusal))))
                        return
                    }
                    switch await handler.handle(line: line) {
                    case .response(let response):
                        try await outbound.write(ByteBuffer(bytes: WireCoding.encodeLine(response)))
                    case .stream(let stream):
                        // From here the connection carries only the stream; what the client sends
                        // is read (to notice it leaving) and ignored.
                        let writer = Task {
                            do {
                                for await line in stream {
                                    try await outbound.write(ByteBuffer(bytes: line.encoded))
                                }
                            } catch {}  // a write error: the client is gone
                            connection.channel.close(promise: nil)
                        }
                        defer { writer.cancel() }
                        while try await lines.next() != nil {}
                        // End of input is not the end of a watch: `socat` half-closes after its
                        // line and still reads. Only a close or a failed write ends it.
                        try await connection.channel.closeFuture.get()
                        return
                    }
                }
            }
        } catch {
            logger.debug("connection ended with an error", metadata: ["error": "\(error)"])
        }
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
