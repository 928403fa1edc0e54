// Connections/ — the Unix socket: the listener (its directory checks, connection cap), the accept
// loop (peer uid, lines answered at once), line framing, the connection served on its event loop
// once handed over (`ConnectionChannelHandler`) and the request router (`RequestRouter`) that
// hands a line's `Command` (TokendProtocol; decoded once, by whichever of these reads the line) to
// its op's responder in Responders/. It calls the engine only through Commands/' service protocols.

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

/// The Unix-socket front of the daemon (docs/protocol.md): its `AcceptLoop` checks each peer's uid
/// with SO_PEERCRED before a byte is read and answers what it can at once; the rest of a
/// connection is served by a channel that frames JSON Lines and writes whatever the
/// `RequestRouter` replies.
public final class SocketListener: Sendable {
    /// Connections beyond this get one `unavailable` line and are closed, so a flood cannot
    /// exhaust descriptors that the keyring and HTTP clients need. 1024 is far above any real
    /// number of local clients.
    public static let maximumConnections = 1024

    /// Connections beyond this wait in the kernel's queue for the accept loop: a burst of clients
    /// (a build farm's worth) is queued rather than refused at connect.
    static let backlog: Int32 = 256

    let handler: RequestRouter
    let logger: Logger
    let lineTimeLimits: LineTimeLimits
    let uid = getuid()
    /// Connections accepted and not yet closed, on the accept loop or on a channel: the count the
    /// cap checks, entered as each is accepted so a burst cannot slip past it.
    let openCount = Atomic<Int>(0)
    /// The connections handed to channels, closed by `stop()`.
    let openConnections = Mutex<[ObjectIdentifier: any Channel]>([:])
    let acceptLoop = Mutex<AcceptLoop?>(nil)
    /// Set by `stop()`: a connection handed over after it is closed at once.
    let stopping = Atomic<Bool>(false)
    /// Told of work on the socket (the daemon's `IdleMemory`): every connection accepted, and
    /// every read the accept loop serves. Cheap: once a release is armed, an atomic load.
    let onConnection: @Sendable () -> Void
    /// The one event loop of every handed-over connection: a connection on another loop would
    /// cost a thread wake-up, which its client's latency pays.
    let channelLoop = MultiThreadedEventLoopGroup.singleton.next()

    public init(handler: RequestRouter, logger: Logger, lineTimeLimits: LineTimeLimits = .standard, onConnection: @escaping @Sendable () -> Void = {}) {
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
    /// `stop()` is called: the accept loop answers what it can at once and hands the rest of a
    /// connection to a channel on one event loop (docs/architecture.md, "A connection").
    public func run(path: String, activatedDescriptor: CInt?, onListening: @Sendable () -> Void = {}) async throws {
        let listening = try activatedDescriptor ?? Self.bind(path)
        let ended = channelLoop.makePromise(of: Void.self)
        let loop: AcceptLoop
        do {
            loop = try AcceptLoop(listening: listening, owner: self) { ended.succeed(()) }
        } catch {
            close(listening)
            throw error
        }
        acceptLoop.withLock { $0 = loop }
        if stopping.load(ordering: .acquiring) { loop.stop() }  // stopped before it listened
        onListening()
        try await ended.futureResult.get()
        // Returns once every connection has closed too (`stop()` ends them within `closingGrace`):
        // a reply still going out must not be cut off by the process exiting.
        for connection in openConnections.withLock({ Array($0.values) }) {
            try? await connection.closeFuture.get()
        }
    }

    /// A listening socket at `path`, never (even briefly) wider than 0600.
    static func bind(_ path: String) throws(ListenerError) -> Int32 {
        guard let address = UnixSocketAddress(path: path) else {
            throw ListenerError(code: .bindFailed, description: "the socket path \(path) is too long for a Unix socket; choose a shorter --socket")
        }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)  // conversion: C constants
        guard fd >= 0 else { throw ListenerError(code: .bindFailed, description: "cannot create a socket: \(String(cString: strerror(errno)))") }
        let previous = umask(0o177)
        let bound = address.withSockaddr { Glibc.bind(fd, $0, $1) } == 0 && listen(fd, backlog) == 0
        let failure = errno
        umask(previous)
        guard bound else {
            close(fd)
            throw ListenerError(code: .bindFailed, description: "cannot listen on \(path): \(String(cString: strerror(failure)))")
        }
        chmod(path, 0o600)
        return fd
    }

    /// Who a new connection's peer is, and whether this socket takes it. The main socket takes
    /// every peer of our uid as SO_PEERCRED gave it (the audit's writer reads /proc later, off
    /// the listening thread); a consumer socket reads /proc now (its own thread) and refuses a
    /// peer outside its policy's `unit`, with a record of it.
    func admit(_ peer: PeerIdentity) -> Result<Caller, TokendError> {
        guard let gate = handler.gate else { return .success(Caller(consumer: nil, peer: peer)) }
        let caller = Caller(consumer: gate.name, peer: peer.resolved())
        guard let unit = gate.policy.unit, !caller.peer.isInside(unit: unit) else { return .success(caller) }
        let refusal = TokendError(
            .forbidden,
            "consumer \"\(gate.name)\" serves only processes in \(unit), and this one (pid \(peer.pid)) runs in \(caller.peer.unit ?? caller.peer.cgroup ?? "an unknown cgroup"); start it there, e.g. systemd-run --user --scope --unit=\(unit) COMMAND")
        logger.warning("refused a client outside the consumer's unit", metadata: ["consumer": "\(gate.name)", "pid": "\(peer.pid)", "unit": "\(unit)"])
        handler.audit?.record(caller, op: "accept", failure: refusal)
        return .failure(refusal)
    }

    /// Counts a connection just accepted; false when it is one over the cap.
    func openedConnection() -> Bool {
        openCount.wrappingAdd(1, ordering: .relaxed).newValue <= Self.maximumConnections
    }

    func closedConnection() {
        openCount.wrappingSubtract(1, ordering: .relaxed)
    }

    /// Serves the rest of a connection on a channel: first the replies the accept loop could not
    /// write (`unsent`), then the request it decoded and could not answer (`carried`), then the
    /// bytes it did not read as lines (`unanswered`) as if just read. A connection over the cap
    /// gets the refusal instead.
    func adopt(
        _ fd: Int32, caller: Caller = .unknown, unsent: ArraySlice<UInt8> = [], carried: DecodedRequest? = nil, unanswered: ArraySlice<UInt8> = [],
        overCap: Bool = false, refusal: TokendError? = nil
    ) {
        let initialized = Atomic<Bool>(false)
        ClientBootstrap(group: channelLoop)
            // `echo '{"op":"hello"}' | socat - UNIX-CONNECT:…` half-closes after its line: the
            // reply must still go out, so EOF ends reading, not the connection.
            .channelOption(.allowRemoteHalfClosure, value: true)
            .channelInitializer { [self] channel in
                initialized.store(true, ordering: .relaxed)
                let key = ObjectIdentifier(channel)
                openConnections.withLock { $0[key] = channel }
                channel.closeFuture.whenComplete { _ in
                    self.openConnections.withLock { _ = $0.removeValue(forKey: key) }
                    self.closedConnection()
                }
                if stopping.load(ordering: .acquiring) {
                    return channel.close()
                }
                return channel.eventLoop.makeCompletedFuture {
                    if overCap {
                        logger.warning("too many connections; refusing a new one", metadata: ["open": "\(Self.maximumConnections)"])
                        try channel.pipeline.syncOperations.addHandler(OverCapRefusal())
                    } else if let refusal {
                        try channel.pipeline.syncOperations.addHandler(OverCapRefusal(refusal: refusal))
                    } else {
                        try channel.pipeline.syncOperations.addHandlers(
                            CarriedOver(unsent: unsent, unanswered: unanswered), LineFramingChannelHandler(limits: lineTimeLimits),
                            ConnectionChannelHandler(handler, carried: carried, caller: caller))
                    }
                }
            }
            .withConnectedSocket(fd)
            .whenFailure { [self] error in
                logger.error("could not hand a connection to an event loop", metadata: ["error": "\(error)"])
                if !initialized.load(ordering: .relaxed) { closedConnection() }
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
        stopping.store(true, ordering: .releasing)
        acceptLoop.withLock { $0 }?.stop()
        for channel in openConnections.withLock({ Array($0.values) }) { channel.close(mode: .input, promise: nil) }
        channelLoop.scheduleTask(in: Self.closingGrace) { [self] in
            for channel in openConnections.withLock({ Array($0.values) }) { channel.close(promise: nil) }
        }
    }
}

/// The first handler of a connection the accept loop handed over: it passes on what that loop
/// read and wrote before, then leaves the pipeline.
final class CarriedOver: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let unsent: ArraySlice<UInt8>
    private let unanswered: ArraySlice<UInt8>

    init(unsent: ArraySlice<UInt8>, unanswered: ArraySlice<UInt8>) {
        self.unsent = unsent
        self.unanswered = unanswered
    }

    /// Before the channel's first read (which follows its activation): the replies go out ahead
    /// of any later one, and the framer holds the unanswered bytes when its line clock starts.
    func channelActive(context: ChannelHandlerContext) {
        context.fireChannelActive()
        if !unsent.isEmpty { context.writeAndFlush(wrapOutboundOut(ByteBuffer(bytes: unsent)), promise: nil) }
        if !unanswered.isEmpty { context.fireChannelRead(wrapInboundOut(ByteBuffer(bytes: unanswered))) }
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
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
    /// What the line says: the cap by default, or a consumer socket's refusal at accept.
    private let refusal: TokendError

    init(refusal: TokendError = TokendError(
        .unavailable, "tokend serves at most \(SocketListener.maximumConnections) connections at once; try again when one closes")) {
        self.refusal = refusal
    }

    func channelActive(context: ChannelHandlerContext) {
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
