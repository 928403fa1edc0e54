import Foundation
import Testing
import TokendTestSupport
@testable import TokendProviders

/// Both loopback listeners answer only requests addressed to themselves (issue 34): a page of a
/// site whose name resolves to 127.0.0.1 (DNS rebinding) is the same origin as the listener to
/// the browser, but its requests carry the site's name in `Host`. Before, the listener served
/// them: the hosted page (and with it the login's `state`) to anyone, and a `/callback` with that
/// state and an error ended the sign-in.
@Suite struct LoopbackHostTests {
    /// Requests that are not for a listener on 127.0.0.1:`port`, each with the login's `state`
    /// in it: what a rebinding page, a confused client or a hand-made request would send.
    static func foreign(port: Int, path: String, method: String = "GET", extra: String = "") -> [String] {
        let hosts = [
            "evil.example:\(port)", "evil.example", "127.0.0.1", "localhost", "localhost.:\(port)", "localhost:\(port + 1)",
            "[::1]:\(port)", "127.0.0.2:\(port)", "localhost:\(port), evil.example:\(port)", "localhost:0\(port)", "",
        ]
        var requests = hosts.map { "\(method) \(path) HTTP/1.1\r\nHost: \($0)\r\n\(extra)\r\n" }
        requests += [
            // No Host at all, in HTTP/1.1 and in HTTP/1.0 (where it may be left out).
            "\(method) \(path) HTTP/1.1\r\n\(extra)\r\n",
            "\(method) \(path) HTTP/1.0\r\n\(extra)\r\n",
            // Two Hosts, ours first.
            "\(method) \(path) HTTP/1.1\r\nHost: localhost:\(port)\r\nHost: evil.example:\(port)\r\n\(extra)\r\n",
            // Absolute-form: the target names another authority over the Host header.
            "\(method) http://evil.example:\(port)\(path) HTTP/1.1\r\nHost: localhost:\(port)\r\n\(extra)\r\n",
            "\(method) http://127.0.0.1:\(port)\(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\(extra)\r\n",
        ]
        return requests
    }

    /// A refusal: a 400 or 421 status line and no body.
    static func isRefusal(_ answer: String) -> Bool {
        (answer.hasPrefix("HTTP/1.1 421 ") || answer.hasPrefix("HTTP/1.1 400 ")) && answer.lowercased().contains("\r\ncontent-length: 0\r\n")
            && answer.hasSuffix("\r\n\r\n")
    }

    @Test func theRedirectListenerRefusesEveryRequestForAnotherHostAndTheLoginGoesOn() async throws {
        let state = "state-\(UUID().uuidString)"
        let listener = try await LoopbackRedirectListener.start(state: state)
        let port = listener.port
        for request in Self.foreign(port: port, path: "/callback?state=\(state)&error=access_denied") {
            let answer = try LoopbackSocket.exchange(port: port, request)
            #expect(Self.isRefusal(answer), "\(request.debugDescription) got \(answer.debugDescription)")
        }
        // The user's browser (HTTP/1.0 here, and the name's case does not matter) still ends
        // the login, with the first redirect the listener took.
        let answer = try LoopbackSocket.exchange(port: port, "GET /callback?state=\(state)&code=good HTTP/1.0\r\nHost: 127.0.0.1:\(port)\r\n\r\n")
        #expect(answer.hasPrefix("HTTP/1.1 200"), "\(answer)")
        let transport = HTTPTransport(environment: [:])
        let redirect = try await listener.firstRedirect(within: 20, on: transport)
        await transport.shutdown()
        #expect(redirect == .init(code: "good", error: nil, errorDescription: nil))
    }

    @Test func theHostedPagesListenerServesThePageAndSessionToItselfOnly() async throws {
        let state = "state-\(UUID().uuidString)"
        let listener = try await LoopbackRedirectListener.start(state: state, signInPage: "<p>page \(state)</p>")
        let port = listener.port
        let body = #"{"state":"\#(state)","error":"auth/popup-closed-by-user"}"#
        let post = "Origin: http://localhost:\(port)\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n"
        var requests = Self.foreign(port: port, path: "/")
        requests += Self.foreign(port: port, path: "/session", method: "POST", extra: post).map { $0 + body }
        for request in requests {
            let answer = try LoopbackSocket.exchange(port: port, request)
            #expect(Self.isRefusal(answer) && !answer.contains(state), "\(request.debugDescription) got \(answer.debugDescription)")
        }
        // Its own name gets the page; a /callback, even with the state and its own name, is not
        // served here and ends nothing.
        let page = try LoopbackSocket.exchange(port: port, "GET / HTTP/1.1\r\nHost: LocalHost:\(port)\r\n\r\n")
        #expect(page.hasPrefix("HTTP/1.1 200") && page.contains(state), "\(page)")
        let callback = try LoopbackSocket.exchange(port: port, "GET /callback?state=\(state)&error=access_denied HTTP/1.1\r\nHost: localhost:\(port)\r\n\r\n")
        #expect(callback.hasPrefix("HTTP/1.1 404"), "\(callback)")
        // The page's own post ends the sign-in.
        let session = #"{"state":"\#(state)","refresh_token":"rt"}"#
        let answer = try LoopbackSocket.exchange(
            port: port,
            "POST /session HTTP/1.1\r\nHost: localhost:\(port)\r\nOrigin: http://localhost:\(port)\r\nContent-Type: application/json\r\nContent-Length: \(session.utf8.count)\r\n\r\n\(session)")
        #expect(answer.hasPrefix("HTTP/1.1 200"), "\(answer)")
        let transport = HTTPTransport(environment: [:])
        let redirect = try await listener.firstRedirect(within: 20, on: transport)
        await transport.shutdown()
        #expect(redirect.refreshToken == "rt" && redirect.error == nil, "\(redirect)")
    }
}
