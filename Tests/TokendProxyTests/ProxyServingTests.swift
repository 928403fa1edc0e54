import Foundation
import Testing
import TokendCore
import TokendTestSupport
@testable import TokendProxy

/// The proxy serving real connections over loopback, byte for byte: the requests are written as
/// raw HTTP/1.1, the answers read as the bytes the proxy sent.
@Suite struct ProxyServingTests {
    /// The first line ("\r\n" is one Character in Swift).
    func statusLine(_ answer: String) -> Substring { answer.prefix { $0 != "\r\n" } }
    func body(_ answer: String) -> Substring {
        guard let range = answer.range(of: "\r\n\r\n") else { return "" }
        return answer[range.upperBound...]
    }

    @Test func aRequestReachesItsUpstreamWithTheBearerInsteadOfTheClientsAuthorization() async throws {
        try await ProxyWorld.with { world in
            let answer = try await world.exchange(
                "GET http://127.0.0.1:\(world.upstreamPort)/v1/x?q=1 HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer client-own\r\n"
                    + "Proxy-Authorization: Basic cHJveHk=\r\nX-Trace: 7\r\nConnection: close\r\n\r\n")
            #expect(statusLine(answer) == "HTTP/1.1 200 OK")
            let seen = body(answer).split(separator: "\n")
            #expect(seen.first == "target: /v1/x?q=1")
            #expect(seen.filter { $0.lowercased().hasPrefix("authorization:") } == ["Authorization: Bearer stub-token-123"])
            #expect(!answer.contains("client-own") && !answer.contains("cHJveHk="))
            #expect(seen.contains("X-Trace: 7"))
            #expect(world.tokens.asks.withLock { $0 } == ["work"])
            let record = try #require(world.audit.records.withLock { $0.last })
            #expect(record.outcome == .forwarded(status: 200) && record.account == "work" && record.replacedAuthorization)
            #expect(record.peer.uid == UInt32(getuid()))
        }
    }

    @Test func aHostOutsideThePolicyIsRefusedAndTold() async throws {
        try await ProxyWorld.with { world in
            let answer = try await world.exchange("GET http://evil.example.com/steal HTTP/1.1\r\nHost: evil.example.com\r\n\r\n")
            #expect(statusLine(answer) == "HTTP/1.1 403 Forbidden")
            #expect(body(answer) == "tokend proxy: http://evil.example.com is not an upstream of consumer agent's proxy; it forwards only to: http://127.0.0.1:\(world.upstreamPort) (tokend connects to http://127.0.0.1:\(world.upstreamPort))\n")
            #expect(world.tokens.asks.withLock { $0 }.isEmpty)
            #expect(world.audit.records.withLock { $0.last?.outcome } == .refused(.hostNotAllowed))
        }
    }

    @Test func aPlainHTTPUpstreamOffLoopbackNeverGetsAToken() async throws {
        try await ProxyWorld.with(extraUpstreams: [ProxyUpstreamSettings(origin: ProxyOrigin(secure: false, host: "api.example.net", port: 80), account: "work")]) { world in
            let answer = try await world.exchange("POST http://api.example.net/v1 HTTP/1.1\r\nHost: api.example.net\r\nContent-Length: 3\r\n\r\nabc")
            #expect(statusLine(answer) == "HTTP/1.1 403 Forbidden")
            #expect(body(answer).contains("plain HTTP to a host off this machine"))
            #expect(world.tokens.asks.withLock { $0 }.isEmpty)
            #expect(world.audit.records.withLock { $0.last?.outcome } == .refused(.upstreamRefused))
        }
    }

    @Test func connectIsRefusedWith405() async throws {
        try await ProxyWorld.with { world in
            let answer = try await world.exchange("CONNECT 127.0.0.1:\(world.upstreamPort) HTTP/1.1\r\nHost: 127.0.0.1:\(world.upstreamPort)\r\n\r\n")
            #expect(statusLine(answer) == "HTTP/1.1 405 Method Not Allowed")
            #expect(body(answer).contains("tunnel"))
            #expect(world.tokens.asks.withLock { $0 }.isEmpty)
        }
    }

    @Test func anOriginFormRequestIsToldHowToUseTheProxy() async throws {
        try await ProxyWorld.with { world in
            let answer = try await world.exchange("GET /v1/x HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            #expect(statusLine(answer) == "HTTP/1.1 400 Bad Request")
            #expect(body(answer).contains("http_proxy="))
        }
    }

    @Test func theRequestLineAndHeaderFieldsAreBounded() async throws {
        try await ProxyWorld.with { world in
            let target = "http://127.0.0.1:\(world.upstreamPort)/"
            let tooLarge = "HTTP/1.1 431 Request Header Fields Too Large"
            let longTarget = try await world.exchange("GET \(target)\(String(repeating: "a", count: ProxyBounds.maximumHeaderField)) HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(statusLine(longTarget) == tooLarge)
            #expect(body(longTarget) == "tokend proxy: the request line and header fields exceed the proxy's bounds: the target and each field at most 8 KiB, 32 KiB and 100 fields in all\n")
            let manyFields = (0...ProxyBounds.maximumHeaderCount).map { "X-F\($0): v\r\n" }.joined()
            let many = try await world.exchange("GET \(target) HTTP/1.1\r\n\(manyFields)\r\n")
            #expect(statusLine(many) == tooLarge)
            let longField = try await world.exchange("GET \(target) HTTP/1.1\r\nX-Long: \(String(repeating: "b", count: ProxyBounds.maximumHeaderField + 1))\r\n\r\n")
            #expect(statusLine(longField) == tooLarge)
            let fields = (0..<9).map { "X-F\($0): \(String(repeating: "d", count: 3900))\r\n" }.joined()
            let manyBytes = try await world.exchange("GET \(target) HTTP/1.1\r\n\(fields)\r\n")
            #expect(statusLine(manyBytes) == tooLarge)
            #expect(world.tokens.asks.withLock { $0 }.isEmpty)
            // Just inside every bound: forwarded.
            let path = String(repeating: "c", count: 4000)
            let inside = try await world.exchange("GET \(target)\(path) HTTP/1.1\r\n\(fields.split(separator: "\r\n").prefix(6).map { $0 + "\r\n" }.joined())Connection: close\r\n\r\n")
            #expect(statusLine(inside) == "HTTP/1.1 200 OK")
            #expect(world.tokens.asks.withLock { $0 } == ["work"])
        }
    }

    /// Alone only, as ProxyBackPressureTests (scripts/test runs it after the whole suite): inside
    /// it, this upload took 94 s (0.3 s alone) and 25 other in-process tests ran past their limits
    /// meanwhile (stop 54); with a 20 s read deadline it had failed 3 of 3 (stop 53). Not explained.
    @Test(.alone)
    func aChunkedUploadIsStreamedToTheUpstream() async throws {
        try await ProxyWorld.with { world in
            let chunk = [UInt8](repeating: 0x61, count: 60000)
            var request = Array("POST http://127.0.0.1:\(world.upstreamPort)/up HTTP/1.1\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n".utf8)
            for _ in 0..<40 { request += Array("ea60\r\n".utf8) + chunk + Array("\r\n".utf8) }
            request += Array("0\r\n\r\n".utf8)
            let answer = try await world.exchange(request)
            #expect(statusLine(answer) == "HTTP/1.1 200 OK")
            #expect(body(answer).contains("bytes: 2400000\n"))
        }
    }

    @Test func noTokenIsA502ThatSaysWhy() async throws {
        try await ProxyWorld.with(token: .failure(TokendError(.needsLogin, "work needs a login"))) { world in
            let answer = try await world.exchange("GET http://127.0.0.1:\(world.upstreamPort)/ HTTP/1.1\r\nConnection: close\r\n\r\n")
            #expect(statusLine(answer) == "HTTP/1.1 502 Bad Gateway")
            #expect(body(answer) == "tokend proxy: no token for account work (needs_login): work needs a login; the user signs in with: tokenctl login work\n")
        }
        try await ProxyWorld.with(token: .failure(TokendError(.unavailable, "the provider is down"))) { world in
            let answer = try await world.exchange("GET http://127.0.0.1:\(world.upstreamPort)/ HTTP/1.1\r\nConnection: close\r\n\r\n")
            #expect(statusLine(answer) == "HTTP/1.1 503 Service Unavailable")
            #expect(answer.contains("Retry-After: 30\r\n"))
        }
    }

    @Test func aRedirectIsPassedBackNotFollowed() async throws {
        try await ProxyWorld.with { world in
            let answer = try await world.exchange("GET http://127.0.0.1:\(world.upstreamPort)/redirect HTTP/1.1\r\nConnection: close\r\n\r\n")
            #expect(statusLine(answer) == "HTTP/1.1 302 Found")
            #expect(answer.contains("Location: http://elsewhere.example.net/\r\n"))
            #expect(world.audit.records.withLock { $0.last?.outcome } == .forwarded(status: 302))
        }
    }

    @Test func expectContinueIsAnsweredByTheProxy() async throws {
        try await ProxyWorld.with { world in
            let answer = try await world.exchange(
                "PUT http://127.0.0.1:\(world.upstreamPort)/up HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello")
            #expect(answer.hasPrefix("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n"))
            #expect(body(answer).contains("bytes: 5\n") && !body(answer).lowercased().contains("expect:"))
        }
    }

    /// A socket proxy: 0600, the peer's pid and uid from SO_PEERCRED, the file gone once stopped.
    @Test func aSocketProxyServesItsOwnUserAndIsRemovedAtStop() async throws {
        try await ProxyWorld.with { world in
            let directory = try TemporaryDirectory()
            defer { try? directory.remove() }
            let path = directory.path + "/agent.sock"
            let upstream = ProxyUpstreamSettings(origin: ProxyOrigin(secure: false, host: "127.0.0.1", port: world.upstreamPort), account: "work")
            let problems = await world.supervisor.apply([ProxySettings(consumer: "agent", listen: .unix(path: path), upstreams: [upstream])])
            #expect(problems.isEmpty, "\(problems)")
            var info = stat()
            #expect(lstat(path, &info) == 0 && info.st_mode & 0o777 == 0o600)
            let answer = try await ProxyWorld.exchange(unixSocket: path, "GET http://127.0.0.1:\(world.upstreamPort)/s HTTP/1.1\r\nConnection: close\r\n\r\n")
            #expect(statusLine(answer) == "HTTP/1.1 200 OK")
            let record = try #require(world.audit.records.withLock { $0.last })
            #expect(record.peer == ProxyPeer(pid: getpid(), uid: UInt32(getuid())))
            // What `curl --unix-socket SOCK http://HOST/PATH` sends: origin form, the host in Host.
            let originForm = try await ProxyWorld.exchange(unixSocket: path, "GET /o?x=1 HTTP/1.1\r\nHost: 127.0.0.1:\(world.upstreamPort)\r\nConnection: close\r\n\r\n")
            #expect(statusLine(originForm) == "HTTP/1.1 200 OK")
            #expect(body(originForm).hasPrefix("target: /o?x=1\n"))
            let elsewhere = try await ProxyWorld.exchange(unixSocket: path, "GET / HTTP/1.1\r\nHost: evil.example.com\r\nConnection: close\r\n\r\n")
            #expect(statusLine(elsewhere) == "HTTP/1.1 403 Forbidden")
            await world.supervisor.apply([])
            #expect(lstat(path, &info) != 0)
        }
    }

    @Test func aPeerTheDaemonRefusesAtAcceptGetsOnly403() async throws {
        try await ProxyWorld.with { world in
            world.audit.refusing.withLock { $0["agent"] = "consumer agent is limited to unit app-build.scope" }
            let answer = try await world.exchange("GET http://127.0.0.1:\(world.upstreamPort)/ HTTP/1.1\r\nConnection: close\r\n\r\n")
            #expect(statusLine(answer) == "HTTP/1.1 403 Forbidden")
            #expect(body(answer) == "tokend proxy: consumer agent is limited to unit app-build.scope\n")
            #expect(world.tokens.asks.withLock { $0 }.isEmpty)
        }
    }

    /// Past the cap a connection is closed before a byte is read; one closing makes room again.
    /// Which of 129 is closed is not fixed (connections are set up on several event loops), so
    /// the test waits for exactly one of them to be closed by the proxy.
    @Test func connectionsAreCapped() async throws {
        try await ProxyWorld.with { world in
            let request = Array("GET http://127.0.0.1:\(world.upstreamPort)/ HTTP/1.1\r\nConnection: close\r\n\r\n".utf8)
            var open: [Int32] = []
            for _ in 0...ProxyBounds.maximumConnections { open.append(try LoopbackSocket.connect(port: world.proxyPort)) }
            // Closed by the peer: a non-blocking peek reads the end of the stream.
            func closedByProxy(_ fd: Int32) -> Bool {
                var byte: UInt8 = 0
                return recv(fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT)) == 0
            }
            try await poll("one of \(open.count) connections is closed by the proxy") { open.contains(where: closedByProxy) }
            // Give any other wrongly closed one the same time to show, then count.
            try await Task.sleep(for: .milliseconds(200))
            let closed = open.filter(closedByProxy)
            defer { (open + closed).forEach { close($0) } }
            // Without the cap none would be closed until the idle timeout closed them all.
            try #require(closed.count == 1)
            open.removeAll(where: closed.contains)
            // One of the held ones closes: once the proxy counted it, a new one is served.
            let last = try #require(open.last)
            open.removeLast()
            close(last)
            try await poll("a connection is served once one closed") {
                let next = try LoopbackSocket.connect(port: world.proxyPort)
                defer { close(next) }
                return statusLine(try ProxyWorld.talk(next, request)) == "HTTP/1.1 200 OK"
            }
        }
    }

    @Test func aReloadAppliesToTheNextRequest() async throws {
        try await ProxyWorld.with { world in
            let target = "GET http://127.0.0.1:\(world.upstreamPort)/ HTTP/1.1\r\nConnection: close\r\n\r\n"
            let answer3 = try await world.exchange(target)
            #expect(statusLine(answer3) == "HTTP/1.1 200 OK")
            await world.supervisor.apply([ProxySettings(consumer: "agent", listen: .tcp(host: "127.0.0.1", port: world.proxyPort), upstreams: [])])
            let answer4 = try await world.exchange(target)
            #expect(statusLine(answer4) == "HTTP/1.1 403 Forbidden")
            await world.supervisor.apply([])
            #expect(throws: (any Error).self) { _ = try LoopbackSocket.connect(port: world.proxyPort) }
        }
    }
}
