import AsyncHTTPClient
import Logging
import NIOCore
import NIOPosix

/// Every consumer's proxy, started, re-configured and stopped with the daemon. On a reload a
/// proxy whose address stays keeps listening and takes the new policy for its next request; one
/// whose address changed is stopped and bound again; one no longer configured stops.
public actor ProxySupervisor {
    let tokens: any ProxyTokenSource
    let audit: (any ProxyAccess)?
    let logger: Logger
    /// Made at `start`, shut down at `stop`: async-http-client traps on a client dropped unshut,
    /// and a daemon a test builds but never runs must not leave one behind.
    var forwarder: ProxyForwarder?
    var running: [String: ProxyServer] = [:]
    /// Until `start`, the configuration's proxies are only kept: the daemon binds them once its
    /// socket is its own.
    var started = false
    var pending: [ProxySettings] = []
    var stopped = false

    public init(tokens: any ProxyTokenSource, audit: (any ProxyAccess)?, logger: Logger) {
        self.tokens = tokens
        self.audit = audit
        self.logger = logger
    }

    static func makeClient() -> HTTPClient {
        var configuration = HTTPClient.Configuration()
        configuration.timeout = .init(connect: .seconds(ProxyBounds.connectTimeout), read: .seconds(ProxyBounds.readTimeout))
        // A redirect is the client's to follow: followed here, it would carry the token to
        // wherever the Location points. The 3xx goes back to the client as it came.
        configuration.redirectConfiguration = .disallow
        // The upstream's answer is passed on as sent (no decompression).
        configuration.decompression = .disabled
        return HTTPClient(eventLoopGroupProvider: .shared(MultiThreadedEventLoopGroup.singleton), configuration: configuration)
    }

    /// Applies the configuration's proxies. Returns one sentence per proxy that could not start
    /// (a bad address, a port in use); the others run regardless.
    @discardableResult
    public func apply(_ settings: [ProxySettings]) async -> [String] {
        guard !stopped else { return [] }
        guard started, let forwarder else {
            pending = settings
            return []
        }
        var problems: [String] = []
        var wanted: [String: ProxyPolicy] = [:]
        for entry in settings {
            do {
                wanted[entry.consumer] = try ProxyPolicy(entry)
            } catch {
                problems.append("consumer \(entry.consumer): \(error.description)")
            }
        }
        for (name, server) in running where wanted[name]?.endpoint != server.endpoint {
            // A policy that failed to load keeps the running proxy on its last good one.
            if wanted[name] == nil && settings.contains(where: { $0.consumer == name }) { continue }
            await server.stop()
            running[name] = nil
            logger.info("proxy stopped", metadata: ["consumer": "\(name)", "address": "\(server.endpoint)"])
        }
        for (name, policy) in wanted.sorted(by: { $0.key < $1.key }) {
            if let server = running[name] {
                server.update(policy)
                continue
            }
            do {
                running[name] = try await ProxyServer.start(policy, forwarder: forwarder, audit: audit, logger: logger)
                logger.info("proxy listening", metadata: ["consumer": "\(name)", "address": "\(policy.endpoint)", "upstreams": "\(policy.upstreams.map(\.origin.description).joined(separator: ","))"])
            } catch {
                problems.append("consumer \(name): the proxy cannot listen on \(policy.endpoint): \(error)")
            }
            for upstream in policy.upstreams { if let why = upstream.refusal { logger.warning("proxy upstream refused", metadata: ["consumer": "\(name)", "reason": "\(why)"]) } }
        }
        for problem in problems { logger.error("proxy not started", metadata: ["problem": "\(problem)"]) }
        return problems
    }

    /// The address each running proxy listens on (tests read the port they bound).
    public var addresses: [String: String] {
        running.mapValues { server in
            guard case .tcp = server.endpoint, let address = server.localAddress, let ip = address.ipAddress, let port = address.port else {
                return server.endpoint.description
            }
            return "\(ip):\(port)"
        }
    }

    /// Binds the proxies the configuration named so far; later `apply` calls take effect at once.
    @discardableResult
    public func start() async -> [String] {
        guard !started, !stopped else { return [] }
        started = true
        forwarder = ProxyForwarder(client: Self.makeClient(), tokens: tokens, audit: audit)
        return await apply(pending)
    }

    /// Stops every proxy and the upstream client; later `apply` calls do nothing.
    public func stop() async {
        guard !stopped else { return }
        stopped = true
        for server in running.values { await server.stop() }
        running = [:]
        try? await forwarder?.client.shutdown()
        forwarder = nil
    }
}
