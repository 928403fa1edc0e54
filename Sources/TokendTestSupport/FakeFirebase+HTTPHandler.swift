import Foundation
import NIOCore
import NIOHTTP1

/// The connection layer: turns HTTP/1.1 exchanges into calls on the backend and performs what it
/// decides, including the ways of not answering that faults ask for. One per connection, living
/// on its event loop; only the backend is shared.
final class FakeFirebaseHTTPHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    /// Firebase requests are a few hundred bytes; a test double must not buffer without bound.
    static let maximumBodyBytes = 1 << 20

    private let backend: FakeFirebase.Backend
    private var head: HTTPRequestHead?
    private var body = ByteBuffer()
    private var fault: FakeFirebase.Fault?
    /// Set once the connection is being reset, dropped or left hanging: further input is ignored.
    private var abandoned = false

    init(backend: FakeFirebase.Backend) {
        self.backend = backend
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !abandoned else { return }
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            body.clear()
            let path = Self.path(of: head.uri)
            fault = backend.takeFault(for: Route(path: path))
            if fault == .refuse {
                abandoned = true
                backend.logRefused(method: head.method.rawValue, path: path)
                reset(context)
            }
        case .body(var chunk):
            guard body.readableBytes + chunk.readableBytes <= Self.maximumBodyBytes else {
                abandoned = true
                write(.text(413, "Request body too large"), keepAlive: false, truncated: false, context: context)
                return
            }
            body.writeBuffer(&chunk)
        case .end:
            guard let head else { return }
            self.head = nil
            let query = Self.query(of: head.uri)
            let request = IncomingRequest(
                method: head.method.rawValue, path: Self.path(of: head.uri), query: query,
                apiKey: query["key"] ?? head.headers.first(name: "x-goog-api-key"),
                contentType: head.headers.first(name: "content-type"),
                body: body.readBytes(length: body.readableBytes) ?? [])
            let decision = backend.handle(request, fault: fault)
            fault = nil
            perform(decision, keepAlive: head.isKeepAlive, context: context)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    // MARK: - Performing a decision

    private func perform(_ decision: Decision, keepAlive: Bool, context: ChannelHandlerContext) {
        switch decision.action {
        case .drop, .dropMidResponse, .hang, .trickle: abandoned = true
        case .reply: break
        }
        guard decision.delay > 0 else { return act(decision.action, keepAlive: keepAlive, context: context) }
        let delay = TimeAmount.nanoseconds(Int64(decision.delay * 1_000_000_000))
        context.eventLoop.assumeIsolated().scheduleTask(in: delay) {
            self.act(decision.action, keepAlive: keepAlive, context: context)
        }
    }

    private func act(_ action: Decision.Action, keepAlive: Bool, context: ChannelHandlerContext) {
        switch action {
        case .reply(let reply): write(reply, keepAlive: keepAlive, truncated: false, context: context)
        case .dropMidResponse(let reply): write(reply, keepAlive: false, truncated: true, context: context)
        case .drop: context.close(promise: nil)
        case .hang: break
        case .trickle(let reply): trickle(reply, context: context)
        }
    }

    /// Sends `reply`'s head, then one byte of its body per interval until the client hangs up.
    private func trickle(_ reply: Reply, context: ChannelHandlerContext) {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: reply.contentType)
        headers.add(name: "Content-Length", value: String(reply.body.count))
        let head = HTTPResponseHead(version: .http1_1, status: HTTPResponseStatus(statusCode: reply.status), headers: headers)
        context.writeAndFlush(wrapOutboundOut(.head(head)), promise: nil)
        let interval = TimeAmount.milliseconds(Int64(FakeFirebase.trickleInterval * 1000))
        let loop = context.eventLoop.assumeIsolated()
        func send(_ index: Int) {
            guard context.channel.isActive, index < reply.body.count else { return }
            let byte = context.channel.allocator.buffer(bytes: [reply.body[index]])
            context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(byte))), promise: nil)
            loop.scheduleTask(in: interval) { send(index + 1) }
        }
        send(0)
    }

    /// Writes `reply`; `truncated` sends its head (announcing the full length) and half its body,
    /// then closes, so the client sees a response die part-way.
    private func write(_ reply: Reply, keepAlive: Bool, truncated: Bool, context: ChannelHandlerContext) {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: reply.contentType)
        headers.add(name: "Content-Length", value: String(reply.body.count))
        for (name, value) in reply.extraHeaders.sorted(by: { $0.key < $1.key }) { headers.add(name: name, value: value) }
        if !keepAlive && !truncated { headers.add(name: "Connection", value: "close") }
        let head = HTTPResponseHead(version: .http1_1, status: HTTPResponseStatus(statusCode: reply.status), headers: headers)
        let bytes = truncated ? Array(reply.body.prefix(reply.body.count / 2)) : reply.body
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        let bodyPart = wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: bytes))))
        let written: EventLoopFuture<Void>
        if truncated {
            written = context.writeAndFlush(bodyPart)
        } else {
            context.write(bodyPart, promise: nil)
            written = context.writeAndFlush(wrapOutboundOut(.end(nil)))
        }
        guard truncated || !keepAlive else { return }
        written.assumeIsolated().whenComplete { _ in context.close(promise: nil) }
    }

    /// Closes with an RST instead of a FIN (SO_LINGER 0), as a refused or crashed peer would.
    private func reset(_ context: ChannelHandlerContext) {
        guard let socket = context.channel as? any SocketOptionProvider else {
            context.close(promise: nil)
            return
        }
        socket.setSoLinger(linger(l_onoff: 1, l_linger: 0)).assumeIsolated().whenComplete { _ in
            context.close(promise: nil)
        }
    }

    // MARK: - Request target

    static func path(of uri: String) -> String {
        let raw = uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
        return raw.removingPercentEncoding ?? raw
    }

    static func query(of uri: String) -> [String: String] {
        let parts = uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        return parts.count > 1 ? FormEncoding.decode(parts[1]) : [:]
    }
}
