// Proxy/ — the consumers' proxies (TokendProxy) as parts of the daemon: tokens from the engine
// on the `token` op's path, the configuration's `proxy` and `[[consumer.NAME.upstream]]` values
// handed over as they are, started after the socket is the daemon's, stopped before the engine.

import Logging
import ServiceLifecycle
import TokendCore
import TokendProxy

/// The engine as the proxy's token source: the same ticketed path as `token` (single flight, the
/// min-valid wait, the scoped-token cache), so the proxy never holds a token of its own.
struct EngineProxyTokens: ProxyTokenSource {
    let commands: AccountCommands

    func bearer(account: String, kind: TokenKind?, scope: TokenScope?, minValid: Double, timeout: Double) async -> Result<String, TokendError> {
        await commands.token(account: account, kind: kind, scope: scope, minValid: minValid, timeout: timeout).map(\.token)
    }
}

/// Starts the proxies once the daemon's socket is its own (a second daemon refused at start must
/// not take the first one's ports or socket files), and stops them before the engine stops.
struct ProxyService: Service {
    let daemon: Daemon

    func run() async {
        await daemon.proxies.start()
        try? await gracefulShutdown()
        await daemon.proxies.stop()
    }
}

extension Configuration {
    /// Each consumer's `proxy` with its upstreams, as the proxy takes them: the values
    /// Configuration+Consumers.swift parsed and checked, carried over, never parsed again.
    var proxySettings: [ProxySettings] {
        consumers.values.sorted { $0.name < $1.name }.compactMap { consumer in
            guard let address = consumer.proxyAddress else { return nil }
            let listen: ProxyEndpoint
            switch address {
            // `localhost` is bound as 127.0.0.1: resolving it could pick ::1 on one machine and
            // 127.0.0.1 on another, and clients are told one address.
            case .tcp(let host, let port): listen = .tcp(host: host == "localhost" ? "127.0.0.1" : host, port: port)
            case .unix(let path): listen = .unix(path: path)
            }
            let upstreams = consumer.upstreams.map { upstream in
                ProxyUpstreamSettings(
                    origin: ProxyOrigin(secure: upstream.scheme == "https", host: upstream.host, port: upstream.port), ca: upstream.ca,
                    account: upstream.account, kind: upstream.kind, audience: upstream.audience, scopes: upstream.scopes ?? [])
            }
            return ProxySettings(consumer: consumer.name, listen: listen, upstreams: upstreams)
        }
    }
}
