// TokendProxy — the per-consumer HTTP forward proxy that keeps the token (README, "The proxy"):
// a client speaks plain HTTP to it in absolute form; for an origin of its policy it connects to
// the upstream itself (TLS, the upstream's CA or the system's), puts the account's bearer token in
// `Authorization`, and streams both bodies. It takes plain values (`ProxySettings`) and asks a
// `ProxyTokenSource` for tokens; the daemon wires it to the engine, the config and the audit.

import TokendCore

/// One `[[consumer.NAME.upstream]]` entry as the configuration parsed it, before the proxy checks it.
public struct ProxyUpstreamSettings: Sendable, Equatable {
    /// The origin tokend connects to: `https://host[:port]` (or `http://` to a loopback host).
    public var origin: ProxyOrigin
    /// A PEM file of the CA(s) the upstream's certificate must chain to; nil: the system's store.
    public var ca: String?
    public var account: String
    /// Nil: the account's default kind.
    public var kind: TokenKind?
    public var audience: String?
    public var scopes: [String]

    public init(origin: ProxyOrigin, ca: String? = nil, account: String, kind: TokenKind? = nil, audience: String? = nil, scopes: [String] = []) {
        self.origin = origin
        self.ca = ca
        self.account = account
        self.kind = kind
        self.audience = audience
        self.scopes = scopes
    }
}

/// A consumer's proxy as the configuration parsed it: where it listens and what it forwards to.
public struct ProxySettings: Sendable, Equatable {
    public var consumer: String
    public var listen: ProxyEndpoint
    public var upstreams: [ProxyUpstreamSettings]

    public init(consumer: String, listen: ProxyEndpoint, upstreams: [ProxyUpstreamSettings]) {
        self.consumer = consumer
        self.listen = listen
        self.upstreams = upstreams
    }
}

/// An origin: scheme, lowercased host (an IPv6 literal without brackets) and port.
public struct ProxyOrigin: Sendable, Hashable, CustomStringConvertible {
    public var secure: Bool
    public var host: String
    public var port: Int

    public init(secure: Bool, host: String, port: Int) {
        self.secure = secure
        self.host = host.lowercased()
        self.port = port
    }

    public var defaultPort: Int { secure ? 443 : 80 }
    /// As a URL prefix: the port only where it is not the scheme's default.
    public var description: String {
        let bracketed = host.contains(":") ? "[\(host)]" : host
        return (secure ? "https://" : "http://") + bracketed + (port == defaultPort ? "" : ":\(port)")
    }
    /// What a client writes to reach it through the proxy: plain http, the same host and port.
    public var clientForm: String {
        let bracketed = host.contains(":") ? "[\(host)]" : host
        return "http://" + bracketed + (port == defaultPort ? "" : ":\(port)")
    }
}

/// One upstream the proxy may forward to, checked. A `refusal` upstream is kept (so a request for
/// it is told why) but never reached: plain HTTP off loopback, or a CA file that does not load.
public struct ProxyUpstream: Sendable, Equatable {
    public var origin: ProxyOrigin
    public var settings: ProxyUpstreamSettings
    /// The CA certificates' PEM text, read when the configuration was applied.
    public var caPEM: [UInt8]?
    public var refusal: String?
    public var scope: TokenScope?
}

extension ProxyUpstream {
    /// Checks one entry. Throws only for what makes it no origin at all (the route cannot be
    /// matched); a route that must not be used is returned with its `refusal`.
    public init(_ settings: ProxyUpstreamSettings, readFile: (String) -> [UInt8]?) throws(ProxyConfigurationError) {
        let origin = settings.origin
        self.origin = origin
        self.settings = settings
        do {
            scope = try TokenScope(scope: settings.scopes.isEmpty ? nil : settings.scopes.joined(separator: " "), audience: settings.audience)
        } catch {
            throw ProxyConfigurationError("upstream \(origin): \(error.message)")
        }
        // The git helper's rule: a token crosses the network only inside TLS.
        if !origin.secure && !LoopbackHost.contains(Substring(origin.host)) {
            refusal = "the upstream \(origin) is plain HTTP to a host off this machine: tokend never sends a token there; use https://"
        }
        if let path = settings.ca {
            let bytes = readFile(path)
            if let bytes, bytes.count <= ProxyBounds.maximumCAFileSize, String(decoding: bytes, as: UTF8.self).contains("-----BEGIN CERTIFICATE-----") {
                caPEM = bytes
            } else {
                refusal = refusal ?? "the upstream \(origin)'s ca file \(path) is not a readable PEM certificate file (at most \(ProxyBounds.maximumCAFileSize / 1024) KiB)"
            }
        }
    }
}

extension ProxyOrigin {
    /// A request target's `host`, `host:port`, `[v6]` or `[v6]:port`; the host lowercased. Nil for
    /// user info, a path, a query, an empty host, or a port outside 1...65535.
    static func authority(_ text: Substring) -> (String, Int?)? {
        guard !text.isEmpty, text.utf8.count <= ProxyBounds.maximumHostLength,
            !text.contains(where: { "/?#@ \\".contains($0) || $0.isNewline || !$0.isASCII })
        else { return nil }
        var host = text
        var portText: Substring?
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            host = text[text.index(after: text.startIndex)..<close]
            let after = text[text.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { return nil }
                portText = after.dropFirst()
            }
        } else if let colon = text.firstIndex(of: ":") {
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
        }
        guard !host.isEmpty else { return nil }
        guard let portText else { return (host.lowercased(), nil) }
        // At most five digits before converting: a longer run cannot be a port and must not trap.
        guard (1...5).contains(portText.count), portText.allSatisfy(\.isNumber), let port = Int(portText), (1...65535).contains(port) else { return nil }  // conversion: a failable parse of at most five digits
        return (host.lowercased(), port)
    }
}

/// A configuration the proxy cannot run with, in words for the log and `tokenctl reload`.
public struct ProxyConfigurationError: Error, Sendable, Equatable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// A consumer's proxy, checked: its listening address and upstreams, matched per request.
public struct ProxyPolicy: Sendable, Equatable {
    public var consumer: String
    public var endpoint: ProxyEndpoint
    public var upstreams: [ProxyUpstream]

    public init(_ settings: ProxySettings, readFile: (String) -> [UInt8]? = ProxyPolicy.readSmallFile) throws(ProxyConfigurationError) {
        consumer = settings.consumer
        endpoint = settings.listen
        // Whoever reaches the proxy spends the consumer's tokens: never a port off this machine.
        if case .tcp(let host, _) = endpoint, !LoopbackHost.contains(Substring(host)) {
            throw ProxyConfigurationError("consumer \(settings.consumer): the proxy may listen on a loopback address only, not \(endpoint)")
        }
        var upstreams: [ProxyUpstream] = []
        for entry in settings.upstreams {
            let upstream = try ProxyUpstream(entry, readFile: readFile)
            // Two entries for one host and port: the client's request could not say which it meant.
            if upstreams.contains(where: { $0.origin.host == upstream.origin.host && $0.origin.port == upstream.origin.port }) {
                throw ProxyConfigurationError("consumer \(settings.consumer): two upstreams for \(upstream.origin.host):\(upstream.origin.port)")
            }
            upstreams.append(upstream)
        }
        self.upstreams = upstreams
    }

    /// The upstream for a request to `host` and `port` (nil: the client wrote no port). The client
    /// speaks plain http to the proxy for an https origin, so no port means the origin's own
    /// default port (`http://api.example.com/` reaches `https://api.example.com`), and a written
    /// port must be the origin's port.
    public func upstream(host: String, port: Int?) -> ProxyUpstream? {
        upstreams.first { upstream in
            upstream.origin.host == host && (port.map { $0 == upstream.origin.port } ?? (upstream.origin.port == upstream.origin.defaultPort))
        }
    }

    /// The origins a client may ask for, for the 403 that refuses any other.
    public var allowedText: String {
        upstreams.filter { $0.refusal == nil }.map { "\($0.origin.clientForm) (tokend connects to \($0.origin))" }.joined(separator: ", ")
    }

    /// Reads a configured file (a CA bundle) whole, refusing one larger than the bound.
    public static func readSmallFile(_ path: String) -> [UInt8]? {
        ProxyFiles.read(path, limit: ProxyBounds.maximumCAFileSize)
    }
}
