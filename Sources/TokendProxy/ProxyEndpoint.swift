/// Where a consumer's proxy listens: a loopback TCP address or a Unix socket path (the
/// configuration parses it; `ProxyPolicy` refuses any address off loopback).
public enum ProxyEndpoint: Sendable, Hashable, CustomStringConvertible {
    /// Loopback only: a proxy that adds tokens must never be reachable from the network.
    case tcp(host: String, port: Int)
    /// An absolute path; created 0600 by tokend and removed when the proxy stops.
    case unix(path: String)

    var isSocket: Bool {
        if case .unix = self { return true }
        return false
    }

    public var description: String {
        switch self {
        case .tcp(let host, let port): host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        case .unix(let path): path
        }
    }
}
