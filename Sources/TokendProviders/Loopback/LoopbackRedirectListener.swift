import NIOCore
import NIOHTTP1
import NIOConcurrencyHelpers
import NIOPosix
import TokendCore
#if canImport(Glibc)
import Glibc
#endif

/// Receives an authorization redirect on 127.0.0.1 at a port the kernel picks (RFC 8252 §7.3).
/// A redirect whose `state` is not ours is refused with a page saying so, and the listener keeps
/// waiting; the first one with our `state` gets the success or failure page, and the listener
/// closes: one login, one redirect.
///
/// Any local user can connect to a loopback port (docs/security.md, "The loopback redirect
/// listener"), so: a connection from a socket another uid owns is closed unread (the kernel
/// knows a loopback socket's owner); at most `maximumConnections` are open at once, each for at
/// most `connectionDeadline` and `maximumRequestBytes`; and `close()` closes every accepted
/// connection with the listening socket. A request whose `Host` is not the listener's own name
/// (DNS rebinding) is refused on its head (`ListenerHost`).
final class LoopbackRedirectListener: Sendable {
    /// What came back on the redirect: a code, or the provider's error (RFC 6749 §4.1.2.1);
    /// or, from the hosted sign-in page's post, a Firebase refresh token or the SDK's error.
    struct Redirect: Sendable, Equatable {
        var code: String?
        var error: String?
        var errorDescription: String?
        var refreshToken: String? = nil
    }

    static let callbackPath = "/callback"
    /// Where the hosted sign-in page (served at `/`) posts the session it got.
    static let sessionPath = "/session"
    /// A browser opens one or two connections (the redirect, a favicon); 16 leaves room for
    /// retries and preconnects while a flood of held connections costs a few descriptors only.
    static let maximumConnections = 16
    /// A browser sends its request head at once; a connection silent this long is not one.
    static let connectionDeadline: TimeAmount = .seconds(5)
    /// A redirect's request head is a URL with a code and state plus a browser's headers: a few
    /// KiB. More is not a browser.
    static let maximumRequestBytes = 16 * 1024

    let port: Int
    let redirects: AsyncStream<Redirect>
    private let channel: any Channel
    private let connections: AcceptedConnections

    private init(port: Int, redirects: AsyncStream<Redirect>, channel: any Channel, connections: AcceptedConnections) {
        self.port = port
        self.redirects = redirects
        self.channel = channel
        self.connections = connections
    }

    var redirectURI: String { "http://127.0.0.1:\(port)\(Self.callbackPath)" }

    /// `owner` says which uid owns a connection's peer socket (nil: unknown); only `user`'s are served.
    /// With `signInPage`, the listener also serves that page at `/` and takes its post at
    /// `sessionPath` (the hosted sign-in, `HostedSignIn`).
    static func start(
        state: String, signInPage: String? = nil, user: uid_t = geteuid(), deadline: TimeAmount = connectionDeadline, owner: @escaping @Sendable (_ peer: SocketAddress, _ local: SocketAddress) -> uid_t? = { LoopbackPeer.owner(peer: $0, local: $1) }
    ) async throws -> LoopbackRedirectListener {
        let (redirects, continuation) = AsyncStream.makeStream(of: Redirect.self, bufferingPolicy: .bufferingNewest(1))
        let connections = AcceptedConnections()
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { child in
                guard let peer = child.remoteAddress, let local = child.localAddress, owner(peer, local) == user,
                    connections.admit(child)
                else {
                    // Another user's connection, or one too many: closed before a byte is read.
                    return child.close()
                }
                child.closeFuture.whenComplete { _ in connections.remove(child) }
                let timer = child.eventLoop.scheduleTask(in: deadline) { child.close(promise: nil) }
                child.closeFuture.whenComplete { _ in timer.cancel() }
                return child.eventLoop.makeCompletedFuture {
                    try child.pipeline.syncOperations.addHandler(RequestSizeLimit(limit: maximumRequestBytes))
                    try child.pipeline.syncOperations.configureHTTPServerPipeline()
                    try child.pipeline.syncOperations.addHandler(RedirectHandler(state: state, signInPage: signInPage, continuation: continuation))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        let port = channel.localAddress?.port ?? 0
        return LoopbackRedirectListener(port: port, redirects: redirects, channel: channel, connections: connections)
    }

    /// Stops listening and closes every connection still open: nothing outlives the login.
    func close() async {
        try? await channel.close()
        for connection in connections.closeAll() { try? await connection.close() }
    }

    /// The first redirect within `seconds` (else `timedOut`); the listener is closed either way,
    /// its state spent. Both browser sign-ins (OIDC's and Firebase's hosted page) wait this way.
    func firstRedirect(within seconds: Double, on transport: HTTPTransport) async throws -> Redirect {
        do {
            let redirect = try await transport.first(of: redirects, within: seconds)
            await close()
            return redirect
        } catch {
            await close()
            throw error
        }
    }
}

/// The listener's accepted connections: counted for the cap, closed together at the end.
private final class AcceptedConnections: Sendable {
    private let state = NIOLockedValueBox<(open: [ObjectIdentifier: any Channel], closed: Bool)>(([:], false))

    /// Takes `channel` in unless the cap is reached or the listener has closed.
    func admit(_ channel: any Channel) -> Bool {
        state.withLockedValue { state in
            guard !state.closed, state.open.count < LoopbackRedirectListener.maximumConnections else { return false }
            state.open[ObjectIdentifier(channel)] = channel
            return true
        }
    }

    func remove(_ channel: any Channel) {
        _ = state.withLockedValue { $0.open.removeValue(forKey: ObjectIdentifier(channel)) }
    }

    /// Every open connection, and no more from now on.
    func closeAll() -> [any Channel] {
        state.withLockedValue { state in
            state.closed = true
            defer { state.open = [:] }
            return Array(state.open.values)
        }
    }
}

/// Closes a connection that sends more than `limit` bytes: a redirect is one small request.
private final class RequestSizeLimit: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    let limit: Int
    var received = 0

    init(limit: Int) { self.limit = limit }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        received += unwrapInboundIn(data).readableBytes
        guard received <= limit else { return context.close(promise: nil) }
        context.fireChannelRead(data)
    }
}

/// One connection's requests. Every answer closes the connection: a browser makes one request.
private final class RedirectHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    let state: String
    let signInPage: String?
    let continuation: AsyncStream<LoopbackRedirectListener.Redirect>.Continuation
    var head: HTTPRequestHead?
    var body: [UInt8] = []
    /// A request was refused for its `Host`: nothing more on this connection is looked at.
    var refused = false

    init(state: String, signInPage: String?, continuation: AsyncStream<LoopbackRedirectListener.Redirect>.Continuation) {
        self.state = state
        self.signInPage = signInPage
        self.continuation = continuation
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !refused else { return }
        switch unwrapInboundIn(data) {
        case .head(let head):
            // Checked on the head alone: a request for another name gets no page, no body read,
            // and cannot end the login.
            if let refusal = ListenerHost.refusal(of: head, local: context.channel.localAddress) {
                refused = true
                return refuse(refusal, context: context)
            }
            self.head = head
            body = []
        case .body(let chunk): body += chunk.readableBytesView
        case .end:
            guard let head else { return }
            self.head = nil
            answer(head, context: context)
        }
    }

    private func answer(_ head: HTTPRequestHead, context: ChannelHandlerContext) {
        let uri = head.uri
        let parts = uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        let path = parts.first.map(String.init) ?? ""
        if let signInPage, head.method == .GET, path == "/" {
            return respond(200, signInPage, context: context)
        }
        if signInPage != nil, head.method == .POST, path == LoopbackRedirectListener.sessionPath {
            return takeSession(head, context: context)
        }
        // The hosted page's listener serves the page and takes its post, nothing else: the
        // page's errors come through `/session` too, so no `/callback` that a page on the same
        // origin could use to end the sign-in.
        guard signInPage == nil else { return respond(404, Page.notFound, context: context) }
        guard path == LoopbackRedirectListener.callbackPath else {
            return respond(404, Page.notFound, context: context)
        }
        let query = parts.count > 1 ? FormEncoding.decode(parts[1]) : [:]
        guard query["state"] == state else {
            // Not the redirect of this login (a stale tab, or a forged link): refused, and the
            // login keeps waiting for its own.
            return respond(400, Page.wrongState, context: context)
        }
        let redirect = LoopbackRedirectListener.Redirect(code: query["code"], error: query["error"], errorDescription: query["error_description"])
        respond(redirect.code != nil && redirect.error == nil ? 200 : 400, redirect.error == nil ? Page.success : Page.failure, context: context)
        continuation.yield(redirect)
        continuation.finish()
    }

    /// The hosted page's post: `{"state", "refresh_token"}` or `{"state", "error"}`, from the
    /// page's own origin. A browser adds `Origin` to every POST: one from another site (which
    /// could not know `state` anyway) is refused before the body is looked at.
    private func takeSession(_ head: HTTPRequestHead, context: ChannelHandlerContext) {
        guard let origin = head.headers.first(name: "origin"), let local = context.channel.localAddress,
            ListenerHost.own(local).contains(where: { "http://" + $0 == origin })
        else {
            return respond(403, Page.wrongState, context: context)
        }
        struct Posted: Decodable {
            var state: String?
            var refresh_token: String?
            var error: String?
            var message: String?
        }
        guard let posted = try? JSONDecoder().decode(Posted.self, from: Data(body)), posted.state == state else {
            return respond(400, Page.wrongState, context: context)
        }
        let token = posted.refresh_token.flatMap { $0.isEmpty ? nil : $0 }
        let redirect = LoopbackRedirectListener.Redirect(
            code: nil, error: token == nil ? PageMessage.code(posted.error) : nil,
            errorDescription: token == nil ? PageMessage.clean(posted.message) : nil, refreshToken: token)
        respond(token == nil ? 400 : 200, "{}", contentType: "application/json", context: context)
        continuation.yield(redirect)
        continuation.finish()
    }

    private func respond(_ status: Int, _ page: String, contentType: String = "text/html; charset=utf-8", context: ChannelHandlerContext) {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: contentType)
        headers.add(name: "Content-Length", value: String(page.utf8.count))
        headers.add(name: "Connection", value: "close")
        headers.add(name: "Cache-Control", value: "no-store")
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .init(statusCode: status), headers: headers))), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(string: page)))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil))).assumeIsolated().whenComplete { _ in context.close(promise: nil) }
    }

    /// A status line, no body, and the connection closed: nothing of the login for a request
    /// that is not for this listener.
    private func refuse(_ status: HTTPResponseStatus, context: ChannelHandlerContext) {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Length", value: "0")
        headers.add(name: "Connection", value: "close")
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil))).assumeIsolated().whenComplete { _ in context.close(promise: nil) }
    }

    /// The pages the browser shows: short, no script, nothing from the query echoed back.
    enum Page {
        static let success = page("Signed in", "tokend has your session. You can close this tab.")
        static let failure = page("Sign-in failed", "The provider did not sign you in. tokenctl says why; you can close this tab.")
        static let wrongState = page("Not this sign-in", "This link does not belong to the sign-in in progress. Use the link tokenctl printed.")
        static let notFound = page("Not found", "Nothing here.")

        static func page(_ title: String, _ text: String) -> String {
            "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>\(title)</title></head><body><h1>\(title)</h1><p>\(text)</p></body></html>"
        }
    }
}

/// Whether a request is addressed to the listener itself. A page of any web site whose name
/// the site makes resolve to 127.0.0.1 (DNS rebinding) is, to the browser, allowed to read what
/// it fetches from that name, so a listener that answered it would hand over the page and its
/// `state`; the browser still sends the site's own name in `Host`, which is what tells it apart
/// (docs/security.md, "Browser sign-in").
enum ListenerHost {
    /// Why `head` is refused on a listener bound to `local`, or nil when it is for us: exactly one
    /// `Host` (RFC 9112 §3.2: none, or several, is a 400), naming `localhost` or the address the
    /// listener is bound to, with its port (a name's case does not matter, RFC 3986 §3.2.2; a
    /// trailing dot, another port or no port does); and an origin-form target (`/path`), since
    /// an absolute-form one would name its own authority over `Host`'s, and browsers send those
    /// to proxies only.
    static func refusal(of head: HTTPRequestHead, local: SocketAddress?) -> HTTPResponseStatus? {
        let hosts = head.headers["host"]
        guard hosts.count == 1, head.uri.hasPrefix("/") else { return .badRequest }
        guard let local, own(local).contains(hosts[0].lowercased()) else { return .misdirectedRequest }
        return nil
    }

    /// The `Host` values that name a listener bound to `local`.
    static func own(_ local: SocketAddress) -> Set<String> {
        guard let port = local.port else { return [] }
        switch local {
        case .v4: return ["localhost:\(port)", "\(local.ipAddress ?? "127.0.0.1"):\(port)"]
        case .v6: return ["localhost:\(port)", "[\(local.ipAddress ?? "::1")]:\(port)"]
        case .unixDomainSocket: return []
        }
    }
}

/// `application/x-www-form-urlencoded` decoding: `+` is a space, `%XX` a byte; the first
/// occurrence of a name wins. The redirect's query here; the fakes read their requests with it.
extension FormEncoding {
    public static func decode(_ text: Substring) -> [String: String] {
        var fields: [String: String] = [:]
        for pair in text.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = unescape(parts[0])
            if fields[name] == nil { fields[name] = parts.count > 1 ? unescape(parts[1]) : "" }
        }
        return fields
    }

    static func unescape(_ text: Substring) -> String {
        var bytes: [UInt8] = []
        var index = text.utf8.startIndex
        let utf8 = text.utf8
        while index < utf8.endIndex {
            let byte = utf8[index]
            if byte == UInt8(ascii: "+") {
                bytes.append(UInt8(ascii: " "))
            } else if byte == UInt8(ascii: "%"), let high = utf8.index(index, offsetBy: 1, limitedBy: utf8.endIndex), high < utf8.endIndex,
                let low = utf8.index(high, offsetBy: 1, limitedBy: utf8.endIndex), low < utf8.endIndex,
                let value = UInt8(String(decoding: [utf8[high], utf8[low]], as: UTF8.self), radix: 16) {  // conversion: a failable parse of a String
                bytes.append(value)
                index = low
            } else {
                bytes.append(byte)
            }
            index = utf8.index(after: index)
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
