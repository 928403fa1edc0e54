import NIOHTTP1
import Testing
import TokendCore
@testable import TokendProxy

/// The proxy's pure pieces: what a request target means, which upstream it reaches, what the
/// configuration may say, and the exact header fields sent each way.
@Suite struct ProxyPiecesTests {
    func policy(_ upstreams: [ProxyUpstreamSettings], listen: ProxyEndpoint = .tcp(host: "127.0.0.1", port: 8080), files: [String: String] = [:]) throws -> ProxyPolicy {
        try ProxyPolicy(ProxySettings(consumer: "agent", listen: listen, upstreams: upstreams)) { files[$0].map { Array($0.utf8) } }
    }

    func https(_ host: String, _ port: Int = 443) -> ProxyOrigin { ProxyOrigin(secure: true, host: host, port: port) }
    func http(_ host: String, _ port: Int = 80) -> ProxyOrigin { ProxyOrigin(secure: false, host: host, port: port) }

    @Test func anAbsoluteFormTargetGivesHostPortAndPath() throws {
        let target = try ProxyTarget.parse(method: .GET, uri: "http://API.Example.com:8443/v1/x?q=1#frag").get()
        #expect(target == ProxyTarget(host: "api.example.com", port: 8443, pathAndQuery: "/v1/x?q=1"))
        #expect(try ProxyTarget.parse(method: .GET, uri: "http://api.example.com").get() == ProxyTarget(host: "api.example.com", port: nil, pathAndQuery: "/"))
        #expect(try ProxyTarget.parse(method: .GET, uri: "http://api.example.com?x").get().pathAndQuery == "/?x")
        #expect(try ProxyTarget.parse(method: .GET, uri: "http://[::1]:9/a").get() == ProxyTarget(host: "::1", port: 9, pathAndQuery: "/a"))
    }

    /// On a socket proxy the origin-form `curl --unix-socket` sends is read with its Host field.
    @Test func anOriginFormTargetIsReadWithItsHostWhereAllowed() throws {
        #expect(try ProxyTarget.parse(method: .GET, uri: "/v1/x?q=1", host: "API.example.com").get() == ProxyTarget(host: "api.example.com", port: nil, pathAndQuery: "/v1/x?q=1"))
        #expect(try ProxyTarget.parse(method: .GET, uri: "/", host: "localhost:8443").get() == ProxyTarget(host: "localhost", port: 8443, pathAndQuery: "/"))
        #expect(throws: ProxyRefusal.self) { try ProxyTarget.parse(method: .GET, uri: "/", host: "user@evil").get() }
        #expect(throws: ProxyRefusal.self) { try ProxyTarget.parse(method: .GET, uri: "/v1/x").get() }
        // An absolute target still wins over Host (RFC 9112 §3.2.2).
        #expect(try ProxyTarget.parse(method: .GET, uri: "http://a.example.com/", host: "b.example.com").get().host == "a.example.com")
    }

    @Test func connectIsRefusedWithTheReason() {
        guard case .failure(let refusal) = ProxyTarget.parse(method: .CONNECT, uri: "api.example.com:443") else {
            Issue.record("CONNECT was accepted")
            return
        }
        #expect(refusal.status == .methodNotAllowed)
        #expect(refusal.code == .connect)
        #expect(refusal.body.contains("tunnel") && refusal.body.contains("http_proxy"))
    }

    @Test func whatAForwardProxyIsNotAskedIsRefused() {
        for uri in ["/v1/x", "https://api.example.com/", "ftp://x/", "http://user@api.example.com/", "http://api.example.com:0/", "http://api.example.com:65536/",
            "http://api.example.com:123456/", "http:///x", "http://a b/"] {
            guard case .failure(let refusal) = ProxyTarget.parse(method: .GET, uri: uri) else {
                Issue.record("\(uri) was accepted")
                continue
            }
            #expect(refusal.status == .badRequest, "\(uri)")
        }
    }

    @Test func aTargetReachesTheUpstreamOfItsHostAndPort() throws {
        let routes = try policy([
            ProxyUpstreamSettings(origin: https("api.example.com"), account: "work"),
            ProxyUpstreamSettings(origin: https("other.example.com", 8443), account: "other"),
        ])
        // No port: the https origin's own (443); a written port must be the origin's.
        #expect(routes.upstream(host: "api.example.com", port: nil)?.settings.account == "work")
        #expect(routes.upstream(host: "api.example.com", port: 443)?.settings.account == "work")
        #expect(routes.upstream(host: "api.example.com", port: 80) == nil)
        #expect(routes.upstream(host: "other.example.com", port: 8443)?.settings.account == "other")
        #expect(routes.upstream(host: "other.example.com", port: nil) == nil)
        #expect(routes.upstream(host: "evil.example.com", port: nil) == nil)
        #expect(routes.upstream(host: "example.com", port: nil) == nil)
        #expect(routes.upstream(host: "api.example.com.evil.net", port: nil) == nil)
        #expect(routes.allowedText == "http://api.example.com (tokend connects to https://api.example.com), http://other.example.com:8443 (tokend connects to https://other.example.com:8443)")
    }

    @Test func plainHTTPIsForLoopbackUpstreamsOnly() throws {
        let routes = try policy([
            ProxyUpstreamSettings(origin: http("api.example.com"), account: "work"),
            ProxyUpstreamSettings(origin: http("127.0.0.1", 9000), account: "local"),
            ProxyUpstreamSettings(origin: http("localhost", 9001), account: "local"),
        ])
        #expect(routes.upstream(host: "api.example.com", port: nil)?.refusal?.contains("plain HTTP to a host off this machine") == true)
        #expect(routes.upstream(host: "127.0.0.1", port: 9000)?.refusal == nil)
        #expect(routes.upstream(host: "localhost", port: 9001)?.refusal == nil)
        #expect(!routes.allowedText.contains("api.example.com"))
    }

    @Test func aCAFileMustHoldACertificate() throws {
        let routes = try policy(
            [
                ProxyUpstreamSettings(origin: https("a.example.com"), ca: "/ca.pem", account: "a"),
                ProxyUpstreamSettings(origin: https("b.example.com"), ca: "/not-a-cert", account: "b"),
                ProxyUpstreamSettings(origin: https("c.example.com"), ca: "/missing", account: "c"),
            ], files: ["/ca.pem": "-----BEGIN CERTIFICATE-----\nMII\n-----END CERTIFICATE-----\n", "/not-a-cert": "hello"])
        #expect(routes.upstream(host: "a.example.com", port: nil)?.refusal == nil)
        #expect(routes.upstream(host: "a.example.com", port: nil)?.caPEM != nil)
        #expect(routes.upstream(host: "b.example.com", port: nil)?.refusal?.contains("/not-a-cert") == true)
        #expect(routes.upstream(host: "c.example.com", port: nil)?.refusal?.contains("/missing") == true)
    }

    @Test func theConfigurationIsChecked() throws {
        #expect(throws: ProxyConfigurationError.self) {
            try policy([ProxyUpstreamSettings(origin: https("a.example.com"), account: "a"), ProxyUpstreamSettings(origin: https("A.example.com"), account: "b")])
        }
        #expect(throws: ProxyConfigurationError.self) { try policy([ProxyUpstreamSettings(origin: https("a.example.com"), account: "a", scopes: ["bad\"scope"])]) }
        // Listening: loopback or a socket path, never the network.
        for host in ["0.0.0.0", "192.168.1.2", "example.com"] {
            #expect(throws: ProxyConfigurationError.self, "\(host)") { try policy([], listen: .tcp(host: host, port: 8080)) }
        }
        _ = try policy([], listen: .tcp(host: "127.0.0.1", port: 8080))
        _ = try policy([], listen: .tcp(host: "::1", port: 8080))
        _ = try policy([], listen: .unix(path: "/run/user/1000/agent-proxy.sock"))
    }

    @Test func theUpstreamGetsTheBearerAndNoneOfTheClientsCredentialsOrHopFields() {
        let client = HTTPHeaders([
            ("Host", "api.example.com"), ("User-Agent", "curl/8"), ("Authorization", "Bearer client-own"), ("authorization", "Basic second"),
            ("Proxy-Authorization", "Basic cHJveHk="), ("Connection", "keep-alive, X-Hop"), ("X-Hop", "1"), ("Keep-Alive", "timeout=5"),
            ("Proxy-Connection", "keep-alive"), ("TE", "trailers"), ("Transfer-Encoding", "chunked"), ("Content-Length", "5"),
            ("Expect", "100-continue"), ("Upgrade", "websocket"), ("Accept", "application/json"), ("X-Request-Id", "7"),
        ])
        let (headers, replaced) = ProxyHeaders.upstreamRequest(client, bearer: "tok.en")
        #expect(replaced)
        // Exactly these, in the client's order, then the one Authorization.
        #expect(headers.map { "\($0.name): \($0.value)" } == ["User-Agent: curl/8", "Accept: application/json", "X-Request-Id: 7", "Authorization: Bearer tok.en"])
        let (plain, replacedPlain) = ProxyHeaders.upstreamRequest(HTTPHeaders([("Accept", "*/*")]), bearer: "t")
        #expect(!replacedPlain)
        #expect(plain.map { "\($0.name): \($0.value)" } == ["Accept: */*", "Authorization: Bearer t"])
    }

    @Test func theClientGetsTheUpstreamsFieldsWithoutHopFields() {
        let upstream = HTTPHeaders([
            ("Content-Type", "application/json"), ("Content-Length", "12"), ("Transfer-Encoding", "chunked"), ("Connection", "close, X-Private"),
            ("X-Private", "1"), ("Proxy-Authenticate", "Basic"), ("Set-Cookie", "a=b"), ("WWW-Authenticate", "Bearer error=\"invalid_token\""),
        ])
        #expect(ProxyHeaders.clientResponse(upstream).map { "\($0.name): \($0.value)" } == [
            "Content-Type: application/json", "Content-Length: 12", "Set-Cookie: a=b", "WWW-Authenticate: Bearer error=\"invalid_token\"",
        ])
    }

    @Test func theBodyLengthIsReadWithoutTrapping() {
        #expect(ProxyHeaders.bodyLength(HTTPHeaders()) == .none)
        #expect(ProxyHeaders.bodyLength(HTTPHeaders([("Content-Length", "0")])) == .none)
        #expect(ProxyHeaders.bodyLength(HTTPHeaders([("Content-Length", "1048576")])) == .known(1_048_576))
        #expect(ProxyHeaders.bodyLength(HTTPHeaders([("Transfer-Encoding", "chunked")])) == .unknown)
        #expect(ProxyHeaders.bodyLength(HTTPHeaders([("Content-Length", "99999999999999999999999")])) == .unknown)
        #expect(ProxyHeaders.bodyLength(HTTPHeaders([("Content-Length", "-1")])) == .unknown)
    }
}
