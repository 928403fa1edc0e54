import CTokendShims
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization
import TokendProviders
#if canImport(Glibc)
import Glibc
#endif

/// What every connection of one proxy shares: its policy (swapped on reload, read per request),
/// the forwarder, the audit and the log.
final class ProxyServerContext: Sendable {
    let current: Mutex<ProxyPolicy>
    let forwarder: ProxyForwarder
    let audit: (any ProxyAccess)?
    let logger: Logger
    let ownUID = UInt32(getuid())  // conversion: uid_t is UInt32 on Linux
    /// Open connections, against `ProxyBounds.maximumConnections`.
    let connections = Atomic<Int>(0)

    init(policy: ProxyPolicy, forwarder: ProxyForwarder, audit: (any ProxyAccess)?, logger: Logger) {
        current = Mutex(policy)
        self.forwarder = forwarder
        self.audit = audit
        self.logger = logger
    }

    func policy() -> ProxyPolicy { current.withLock { $0 } }
}

/// One consumer's listening proxy.
final class ProxyServer: Sendable {
    let context: ProxyServerContext
    let channel: any Channel
    let endpoint: ProxyEndpoint

    private init(context: ProxyServerContext, channel: any Channel, endpoint: ProxyEndpoint) {
        self.context = context
        self.channel = channel
        self.endpoint = endpoint
    }

    /// Binds the policy's endpoint and serves until `stop`.
    static func start(_ policy: ProxyPolicy, forwarder: ProxyForwarder, audit: (any ProxyAccess)?, logger: Logger) async throws -> ProxyServer {
        let context = ProxyServerContext(policy: policy, forwarder: forwarder, audit: audit, logger: logger)
        let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            // Above the connection cap: a burst of clients waits in the kernel instead of having
            // its handshake dropped (seen: a 128-connection burst on a 64 backlog lost some).
            .serverChannelOption(.backlog, value: Int32(ProxyBounds.maximumConnections * 2))  // conversion: a constant, 256
            .childChannelInitializer { channel in
                // Over the cap the connection is closed at once, before a byte is read.
                guard context.connections.add(1, ordering: .relaxed).newValue <= ProxyBounds.maximumConnections else {
                    context.connections.subtract(1, ordering: .relaxed)
                    return channel.close()
                }
                channel.closeFuture.whenComplete { _ in context.connections.subtract(1, ordering: .relaxed) }
                return channel.eventLoop.makeCompletedFuture {
                    let pipeline = channel.pipeline.syncOperations
                    try pipeline.addHandler(IdleStateHandler(readTimeout: .seconds(ProxyBounds.idleTimeout)))
                    try pipeline.addHandler(HTTPResponseEncoder())
                    // The decoder's limits bound the target, each field and the head (ProxyBounds).
                    try pipeline.addHandler(
                        ByteToMessageHandler(
                            HTTPRequestDecoder(leftOverBytesStrategy: .dropBytes, informationalResponseStrategy: .drop, limitConfiguration: ProxyBounds.decoderLimits)))
                    try pipeline.addHandler(HTTPServerPipelineHandler())
                    try pipeline.addHandler(ProxyConnectionHandler(server: context))
                }
            }
        let channel: any Channel
        switch policy.endpoint {
        case .tcp(let host, let port):
            channel = try await bootstrap.bind(host: host, port: port).get()
        case .unix(let path):
            try prepareSocketPath(path)
            channel = try await bootstrap.bind(unixDomainSocketPath: path, cleanupExistingSocketFile: true).get()
            // 0600 like the daemon's own socket; every connection's uid is checked besides.
            chmod(path, 0o600)
        }
        return ProxyServer(context: context, channel: channel, endpoint: policy.endpoint)
    }

    /// The socket's directory must be the user's and writable by no one else, as for the
    /// daemon's own socket: otherwise the socket could be replaced under its clients.
    static func prepareSocketPath(_ path: String) throws(ProxyConfigurationError) {
        let directory = String(path[..<(path.lastIndex(of: "/") ?? path.startIndex)])
        var info = stat()
        guard lstat(directory.isEmpty ? "/" : directory, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR else {
            throw ProxyConfigurationError("proxy socket \(path): its directory does not exist")
        }
        guard info.st_uid == getuid(), info.st_mode & 0o022 == 0 else {
            throw ProxyConfigurationError("proxy socket \(path): its directory must belong to you and be writable by no one else (chmod go-w)")
        }
    }

    func update(_ policy: ProxyPolicy) {
        context.current.withLock { $0 = policy }
    }

    /// Stops listening; connections in flight end on their own. The socket file is removed.
    func stop() async {
        try? await channel.close()
        if case .unix(let path) = endpoint { unlink(path) }
    }

    /// The bound address (the real port where the configuration said 0, as tests do).
    var localAddress: SocketAddress? { channel.localAddress }
}

/// Who is at the other end of a connection, from the kernel. Until it is known the peer counts as
/// another user's (refused).
enum ProxyPeerReader {
    static let unknown = ProxyPeer()

    /// Sets `handler`'s peer: SO_PEERCRED on a Unix socket (read at once on the channel's own
    /// loop), the loopback socket's owner on TCP (LoopbackPeer: sock_diag, else /proc/net/tcp).
    static func read(_ channel: any Channel, into handler: NIOLoopBound<ProxyConnectionHandler>) {
        switch channel.remoteAddress {
        case .unixDomainSocket?:
            (channel as? any SocketOptionProvider)?
                .unsafeGetSocketOption(level: .init(rawValue: SOL_SOCKET), name: .init(rawValue: SO_PEERCRED))
                .whenSuccess { (credentials: tokend_peer_credentials) in
                    handler.value.peer = ProxyPeer(pid: credentials.pid, uid: credentials.uid)
                }
        case let remote?:
            guard let local = channel.localAddress, let uid = LoopbackPeer.owner(peer: remote, local: local) else { return }
            handler.value.peer = ProxyPeer(uid: uid)
        case nil:
            return
        }
    }
}
