import NIOCore
import NIOHTTP1

/// One client connection to a proxy, on its event loop: reads each request head, refuses it or
/// hands it to a `ProxyForwarder` task, and feeds the request body to that task with
/// back-pressure (reading from the client stops while the upstream is slower), so no body is
/// ever held whole. Requests on one connection are answered in order
/// (`HTTPServerPipelineHandler` holds a pipelined one back until the previous answer ends).
final class ProxyConnectionHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart
    typealias BodySource = NIOThrowingAsyncSequenceProducer<ByteBuffer, any Error, NIOAsyncSequenceProducerBackPressureStrategies.HighLowWatermark, BodyDemand>.Source

    enum State {
        /// Waiting for a request head.
        case idle
        /// The answer is written or being written by the proxy itself; the connection closes after it.
        case refusing
        /// With a forwarder: `source` takes the body until `.end` (nil once it ended).
        case forwarding(source: BodySource?, task: Task<Void, Never>, responseEnded: Bool)
    }

    let server: ProxyServerContext
    var peer = ProxyPeerReader.unknown
    var state = State.idle
    /// Reading from the client is held while the body's consumer (the upstream) is behind.
    var readsHeld = false
    var readPending = false
    var context: ChannelHandlerContext?

    init(server: ProxyServerContext) {
        self.server = server
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    /// Set at accept when the daemon refuses the peer (`ProxyAccess.admit`): every request is
    /// answered 403 with it.
    var peerRefusal: String?

    func channelActive(context: ChannelHandlerContext) {
        ProxyPeerReader.read(context.channel, into: NIOLoopBound(self, eventLoop: context.eventLoop))
        context.fireChannelActive()
        guard peer.uid == server.ownUID else {
            // Another user's process, or one gone before it was looked up: closed at once, before
            // a byte is read (as the daemon's socket does), so it cannot hold a connection either.
            // No answer: HTTP has none for a request not yet sent.
            state = .refusing
            var record = ProxyAuditRecord(consumer: server.policy().consumer, account: nil, upstream: "", method: "", outcome: .refused(.otherUser), peer: peer)
            record.reason = "the peer is not a process of uid \(server.ownUID)"
            server.audit?.record(record)
            server.logger.info("proxy closed a connection of another user", metadata: ["consumer": "\(server.policy().consumer)", "uid": "\(peer.uid.map(String.init) ?? "unknown")"])
            context.close(promise: nil)
            return
        }
        if let admitted = server.audit?.admit(peer, consumer: server.policy().consumer) { (peer, peerRefusal) = admitted }
    }

    /// No request for `ProxyBounds.idleTimeout`: the connection goes. A request in flight (a long
    /// download, a slow upstream) is not idle, however quiet the client is.
    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let idle = event as? IdleStateHandler.IdleStateEvent, idle == .read, case .idle = state {
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            guard case .idle = state else { return }
            start(head, context: context)
        case .body(let buffer):
            guard case .forwarding(let source?, _, _) = state else { return }
            if source.yield(buffer) == .stopProducing { readsHeld = true }
        case .end:
            guard case .forwarding(let source, let task, let responseEnded) = state else { return }
            source?.finish()
            state = responseEnded ? .idle : .forwarding(source: nil, task: task, responseEnded: false)
        }
    }

    /// Decides a request: refused at once, or forwarded by a task of its own.
    func start(_ head: HTTPRequestHead, context: ChannelHandlerContext) {
        let policy = server.policy()
        let target: ProxyTarget
        let host = policy.endpoint.isSocket ? head.headers.first(name: "host") : nil
        switch ProxyTarget.parse(method: head.method, uri: head.uri, host: host) {
        case .failure(let refusal):
            return refuse(refusal, account: nil, upstream: String(head.uri.prefix(80)), method: head.method, context: context)
        case .success(let parsed):
            target = parsed
        }
        let asked = ProxyOrigin(secure: false, host: target.host, port: target.port ?? 80).description
        if let why = peerRefusal {
            return refuse(ProxyRefusal(.forbidden, .otherUser, why), account: nil, upstream: asked, method: head.method, context: context)
        }
        guard let upstream = policy.upstream(host: target.host, port: target.port) else {
            let allowed = policy.allowedText
            return refuse(
                ProxyRefusal(.forbidden, .hostNotAllowed, "\(asked) is not an upstream of consumer \(policy.consumer)'s proxy; it forwards only to: \(allowed.isEmpty ? "nothing" : allowed)"),
                account: nil, upstream: asked, method: head.method, context: context)
        }
        if let why = upstream.refusal {
            return refuse(ProxyRefusal(.forbidden, .upstreamRefused, why), account: upstream.settings.account, upstream: upstream.origin.description, method: head.method, context: context)
        }
        let length = ProxyHeaders.bodyLength(head.headers)
        var source: BodySource?
        var body: ProxyForwarder.Body?
        if length != .none {
            let demand = BodyDemand(handler: NIOLoopBound(self, eventLoop: context.eventLoop))
            let made = ProxyForwarder.BodySequence.makeSequence(
                elementType: ByteBuffer.self, failureType: (any Error).self,
                backPressureStrategy: NIOAsyncSequenceProducerBackPressureStrategies.HighLowWatermark(
                    lowWatermark: ProxyBounds.bodyLowWatermark, highWatermark: ProxyBounds.bodyHighWatermark),
                finishOnDeinit: true, delegate: demand)
            source = made.source
            body = ProxyForwarder.Body(sequence: made.sequence, length: length)
        }
        let request = ProxyForwarder.Request(
            head: head, target: target, upstream: upstream, consumer: policy.consumer, peer: peer, body: body,
            expectsContinue: head.headers[canonicalForm: "expect"].contains { $0.lowercased() == "100-continue" })
        let forwarder = server.forwarder
        let channel = context.channel
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        let task = Task {
            let keepAlive = await forwarder.forward(request, channel: channel)
            handler.eventLoop.execute { handler.value.responseEnded(keepAlive: keepAlive) }
        }
        state = .forwarding(source: source, task: task, responseEnded: false)
    }

    /// The forwarder wrote the whole answer. The connection stays for the next request only when
    /// the request's body was read to its end and both sides keep the connection.
    func responseEnded(keepAlive: Bool) {
        guard case .forwarding(let source, let task, _) = state else { return }
        if source == nil && keepAlive {
            state = .idle
        } else {
            // The upstream answered before the upload ended (a 413, a 401): the rest of the body
            // is not read, so the connection cannot carry another request.
            source?.finish()
            state = .forwarding(source: nil, task: task, responseEnded: true)
            context?.close(promise: nil)
        }
    }

    /// Answers the request itself, then closes the connection (its body, if any, is not read).
    func refuse(_ refusal: ProxyRefusal, account: String?, upstream: String, method: HTTPMethod, context: ChannelHandlerContext) {
        state = .refusing
        var record = ProxyAuditRecord(consumer: server.policy().consumer, account: account, upstream: upstream, method: method.rawValue, outcome: .refused(refusal.code), peer: peer)
        record.reason = refusal.message
        server.audit?.record(record)
        server.logger.info("proxy refused a request", metadata: ["consumer": "\(server.policy().consumer)", "upstream": "\(upstream)", "code": "\(refusal.code.rawValue)"])
        let channel = context.channel
        for part in ProxyForwarder.parts(of: refusal) { context.write(wrapOutboundOut(part), promise: nil) }
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
    }

    /// A request the decoder could not read: over a bound of `ProxyBounds`, or not HTTP/1.
    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard case .idle = state else {
            context.close(promise: nil)
            return
        }
        let refusal: ProxyRefusal
        switch error {
        case HTTPParserError.headerOverflow:
            refusal = ProxyRefusal(
                .requestHeaderFieldsTooLarge, .tooLarge,
                "the request line and header fields exceed the proxy's bounds: the target and each field at most \(ProxyBounds.maximumHeaderField / 1024) KiB, \(ProxyBounds.maximumHeaderBytes / 1024) KiB and \(ProxyBounds.maximumHeaderCount) fields in all")
        default:
            refusal = ProxyRefusal(.badRequest, .badRequest, "the request is not valid HTTP/1.1")
        }
        refuse(refusal, account: nil, upstream: "", method: .GET, context: context)
    }

    func channelInactive(context: ChannelHandlerContext) {
        if case .forwarding(let source, let task, _) = state {
            source?.finish(ProxyRefusal(.badRequest, .badRequest, "the client closed the connection"))
            task.cancel()
        }
        state = .refusing
        context.fireChannelInactive()
    }

    func read(context: ChannelHandlerContext) {
        if readsHeld {
            readPending = true
        } else {
            context.read()
        }
    }

    /// The body's consumer wants more: reading from the client resumes.
    func resumeReads() {
        readsHeld = false
        guard readPending, let context else { return }
        readPending = false
        context.read()
    }
}

/// The request body's consumer asking for more (NIO's back-pressure): resumes the client's reads
/// on the connection's event loop.
struct BodyDemand: NIOAsyncSequenceProducerDelegate {
    let handler: NIOLoopBound<ProxyConnectionHandler>

    func produceMore() {
        let handler = handler
        handler.eventLoop.execute { handler.value.resumeReads() }
    }

    func didTerminate() {
        let handler = handler
        handler.eventLoop.execute { handler.value.resumeReads() }
    }
}
