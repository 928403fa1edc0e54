import NIOHTTP1

/// Why the proxy answered a request itself instead of forwarding it: an HTTP status, a code for
/// the audit, and one sentence for the client that says what to do instead. Never a token.
public struct ProxyRefusal: Error, Sendable, Equatable {
    public enum Code: String, Sendable {
        /// Origin-form or an https target: not something a forward proxy is asked.
        case notProxyRequest = "not_proxy_request"
        /// CONNECT: a tunnel would carry the client's own TLS, with nothing to put a token in.
        case connect
        /// The origin is not one of the consumer's upstreams.
        case hostNotAllowed = "host_not_allowed"
        /// The upstream is configured but must not be used (plain HTTP off loopback, bad CA file).
        case upstreamRefused = "upstream_refused"
        /// The peer is another user (TCP loopback; a Unix socket is 0600), or outside the unit the
        /// consumer is limited to.
        case otherUser = "other_user"
        /// No token: the account needs a login, is unknown, or its provider is down.
        case noToken = "no_token"
        /// The upstream could not be reached or broke off.
        case upstreamFailed = "upstream_failed"
        /// A bound of `ProxyBounds`.
        case tooLarge = "too_large"
        case badRequest = "bad_request"
    }

    public var status: HTTPResponseStatus
    public var code: Code
    public var message: String
    /// Extra response headers (`Allow`, `Retry-After`).
    public var headers: [(String, String)] = []

    public init(_ status: HTTPResponseStatus, _ code: Code, _ message: String, headers: [(String, String)] = []) {
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers
    }

    public static func == (lhs: ProxyRefusal, rhs: ProxyRefusal) -> Bool {
        lhs.status == rhs.status && lhs.code == rhs.code && lhs.message == rhs.message && lhs.headers.elementsEqual(rhs.headers, by: ==)
    }

    /// The response body: one line, plain text.
    public var body: String { "tokend proxy: \(message)\n" }
}

/// Where an absolute-form request goes: the origin's host and port as written, and the path.
public struct ProxyTarget: Sendable, Equatable {
    public var host: String
    /// Nil: the client wrote none.
    public var port: Int?
    /// Path and query, starting with `/` (`/` when the target had none); no fragment.
    public var pathAndQuery: String

    /// Reads the request line's target. A forward proxy is sent `http://host[:port]/path`
    /// (RFC 9112 §3.2.2); everything else is refused with what to do instead. `host`: the `Host`
    /// field where an origin-form target (`/path`) is taken too: on a socket proxy, so that
    /// `curl --unix-socket SOCK http://api.example.com/path` (which sends `GET /path`, `Host:
    /// api.example.com`) works from a sandbox that has the socket and no network.
    public static func parse(method: HTTPMethod, uri: String, host: String? = nil) -> Result<ProxyTarget, ProxyRefusal> {
        if method == .CONNECT {
            return .failure(ProxyRefusal(
                .methodNotAllowed, .connect,
                "CONNECT is refused: inside a tunnel the client's own TLS reaches the upstream, and tokend has nothing to put the token in. Send plain http://HOST/PATH through this proxy (http_proxy, not https_proxy): tokend makes the TLS connection itself and adds the token",
                headers: [("Allow", "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS")]))
        }
        if let host, uri.hasPrefix("/") {
            guard let (name, port) = ProxyOrigin.authority(Substring(host)) else {
                return .failure(ProxyRefusal(.badRequest, .badRequest, "the Host field is not a valid host and port"))
            }
            let path = uri.firstIndex(of: "#").map { String(uri[..<$0]) } ?? uri
            return .success(ProxyTarget(host: name, port: port, pathAndQuery: path))
        }
        let lowered = uri.prefix(8).lowercased()
        guard lowered.hasPrefix("http://") else {
            let why = lowered.hasPrefix("https://")
                ? "an https:// target: write http://HOST/PATH, tokend makes the TLS connection to the upstream itself"
                : "not a proxy request (the target \(uri.hasPrefix("/") ? "is a path" : "is not http://HOST/PATH")): use this address as http_proxy, e.g. http_proxy=http://ADDRESS curl http://HOST/PATH"
            return .failure(ProxyRefusal(.badRequest, .notProxyRequest, why))
        }
        let rest = uri.dropFirst(7)
        let end = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
        guard let (host, port) = ProxyOrigin.authority(rest[..<end]) else {
            return .failure(ProxyRefusal(.badRequest, .badRequest, "the target's host and port are not valid (no user info; port 1-65535)"))
        }
        var path = rest[end...]
        if let fragment = path.firstIndex(of: "#") { path = path[..<fragment] }
        let pathAndQuery = path.hasPrefix("/") ? String(path) : "/" + path
        return .success(ProxyTarget(host: host, port: port, pathAndQuery: pathAndQuery))
    }
}

/// The header rewriting, both ways: RFC 9110 §7.6.1's hop-by-hop fields stay on their hop, and the
/// upstream's `Authorization` is tokend's alone.
public enum ProxyHeaders {
    /// Fields of one connection only (and `Proxy-*`, which are for this proxy): never forwarded.
    static let hopByHop: Set<String> = [
        "connection", "keep-alive", "proxy-connection", "proxy-authorization", "proxy-authenticate", "te", "trailer", "transfer-encoding", "upgrade",
    ]

    /// The fields sent upstream: the client's, minus hop-by-hop fields, `Host` (the client library
    /// writes the upstream's), `Content-Length` (it follows the body's framing), `Expect` (the proxy
    /// answers 100-continue itself) and any `Authorization`, plus the bearer token.
    /// `replacedAuthorization`: the client sent one (it is dropped, never forwarded).
    public static func upstreamRequest(_ headers: HTTPHeaders, bearer: String) -> (headers: HTTPHeaders, replacedAuthorization: Bool) {
        let dropped = droppedNames(headers).union(["host", "content-length", "expect", "authorization"])
        var out = HTTPHeaders()
        for (name, value) in headers where !dropped.contains(name.lowercased()) { out.add(name: name, value: value) }
        out.add(name: "Authorization", value: "Bearer " + bearer)
        return (out, headers.contains(name: "authorization"))
    }

    /// The fields sent back to the client: the upstream's, minus hop-by-hop fields (the proxy
    /// frames the body to the client itself).
    public static func clientResponse(_ headers: HTTPHeaders) -> HTTPHeaders {
        let dropped = droppedNames(headers)
        var out = HTTPHeaders()
        for (name, value) in headers where !dropped.contains(name.lowercased()) { out.add(name: name, value: value) }
        return out
    }

    /// The hop-by-hop names, with those the message's own `Connection` field lists.
    static func droppedNames(_ headers: HTTPHeaders) -> Set<String> {
        var names = hopByHop
        for value in headers[canonicalForm: "connection"] { names.insert(value.trimmingSpaces.lowercased()) }
        return names
    }

    /// The request body's length: from `Content-Length` (digits only, at most 18 of them so the
    /// conversion cannot trap), unknown when chunked, none when neither is sent.
    public enum BodyLength: Sendable, Equatable { case none, known(Int64), unknown }

    public static func bodyLength(_ headers: HTTPHeaders) -> BodyLength {
        if headers[canonicalForm: "transfer-encoding"].contains(where: { $0.lowercased() == "chunked" }) { return .unknown }
        guard let text = headers.first(name: "content-length") else { return .none }
        guard (1...18).contains(text.utf8.count), text.utf8.allSatisfy({ (0x30...0x39).contains($0) }), let count = Int64(text) else { return .unknown }  // conversion: a failable parse of at most 18 digits
        return count == 0 ? .none : .known(count)
    }
}

extension Substring {
    var trimmingSpaces: String {
        String(drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}
