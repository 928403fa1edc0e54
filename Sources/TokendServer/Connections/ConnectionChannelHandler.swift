import NIOCore
import TokendCore
import TokendProtocol

/// Serves one connection on its event loop (docs/architecture.md, "A connection"): lines come in
/// from `LineFramingChannelHandler`, replies go out in request order. A line the loop can answer itself
/// (`RequestRouter.answerAtOnce`: `hello`, or a token the account already holds) costs no task,
/// no actor hop and no thread hand-off; any other line is handed to a task that asks the engine,
/// and the connection waits for that reply before it takes the next line.
///
/// Back-pressure: while a request is with the engine, lines wait here unanswered, or the client
/// reads none of its replies (the channel is not writable), this handler holds back the channel's
/// `read`, so the kernel's buffers fill and the client's writes stop. `LineFramingChannelHandler` sees no
/// `read` then, so its partial-line clock does not run against the client.
///
/// After a `watch` or `login` reply the connection carries only the stream; what the client sends
/// is read (to notice it leaving) and dropped. End of input ends a connection once every line read
/// is answered; it does not end a stream (`socat` half-closes after its line and still reads).
final class ConnectionChannelHandler: ChannelDuplexHandler {
    typealias InboundIn = LineFrame
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let handler: RequestRouter
    /// Lines read and not yet answered, in order. Bounded by what one read of the socket can hold:
    /// no `read` is passed on while any wait.
    private var waiting = CircularBuffer<LineFrame>()
    /// A line is with the engine: nothing after it is answered before its reply is out.
    private var awaitingEngine = false
    /// The stream that owns the connection from a `watch` or `login` on.
    private var streamWriter: Task<Void, Never>?
    private var inputEnded = false
    /// A `read` held back; passed on once this handler can take more lines.
    private var readHeld = false
    /// A refusal (line too large, empty-line flood) is going out; the connection closes after it.
    private var refused = false

    /// The request the accept loop decoded and could not answer at once: asked first.
    private var carried: DecodedRequest?
    /// The peer, for the audit.
    private let caller: Caller

    init(_ handler: RequestRouter, carried: DecodedRequest? = nil, caller: Caller = .unknown) {
        self.handler = handler
        self.carried = carried
        self.caller = caller
    }

    /// A carried request goes to the engine now; its reply comes back on a later turn of the loop,
    /// after the accept loop's unsent replies (`CarriedOver` writes them once this returns).
    func channelActive(context: ChannelHandlerContext) {
        context.fireChannelActive()
        if let carried {
            self.carried = nil
            ask(carried, context)
        }
    }

    func read(context: ChannelHandlerContext) {
        if streamWriter != nil || canTakeMoreLines(context) {
            context.read()
        } else {
            readHeld = true
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard streamWriter == nil, !refused else { return }  // a stream's connection: input is ignored
        waiting.append(unwrapInboundIn(data))
        answerWaitingLines(context)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        answerWaitingLines(context)
        context.fireChannelWritabilityChanged()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .some(.inputClosed) = event as? ChannelEvent {
            inputEnded = true
            answerWaitingLines(context)
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        streamWriter?.cancel()  // the client left: whatever feeds the stream stops
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    private func canTakeMoreLines(_ context: ChannelHandlerContext) -> Bool {
        waiting.isEmpty && !awaitingEngine && !refused && context.channel.isWritable
    }

    /// Answers waiting lines in order until one needs the engine, the client stops reading its
    /// replies, or none is left; then closes the connection if its input has ended, or passes on
    /// a held `read`.
    private func answerWaitingLines(_ context: ChannelHandlerContext) {
        while !awaitingEngine, !refused, streamWriter == nil, context.channel.isWritable, let frame = waiting.popFirst() {
            switch frame {
            case .line(let line):
                let request = WireCoding.decodeRequest(line)
                if let response = handler.answerAtOnce(request, from: caller) {
                    reply(response, context)
                } else {
                    ask(request, context)
                }
            case .tooLarge, .emptyLineFlood:
                refuse(frame, context)
            }
        }
        guard !awaitingEngine, !refused, streamWriter == nil, waiting.isEmpty else { return }
        if inputEnded {
            context.close(promise: nil)
        } else if readHeld, context.channel.isWritable {
            readHeld = false
            context.read()
        }
    }

    /// Writes one reply line.
    @discardableResult
    private func reply(_ response: Response, _ context: ChannelHandlerContext) -> EventLoopFuture<Void> {
        context.writeAndFlush(wrapOutboundOut(ByteBuffer(bytes: WireCoding.encodeLine(response))))
    }

    /// Hands a decoded line to a task that asks the engine; its reply comes back to the event loop.
    private func ask(_ request: DecodedRequest, _ context: ChannelHandlerContext) {
        awaitingEngine = true
        let handler = self.handler
        let caller = self.caller
        let loop = context.eventLoop
        let bound = NIOLoopBound((self, context), eventLoop: loop)
        Task {
            let answer = await handler.handle(request, from: caller)
            loop.execute {
                let (connection, context) = bound.value
                connection.engineReplied(answer, context)
            }
        }
    }

    private func engineReplied(_ answer: RequestRouter.Reply, _ context: ChannelHandlerContext) {
        awaitingEngine = false
        switch answer {
        case .response(let response):
            reply(response, context)
            answerWaitingLines(context)
        case .stream(let stream):
            startStream(stream, context)
        }
    }

    /// From here the connection is the stream's. Each line waits for the previous one to be
    /// written, so a client that stops reading a `watch` holds the stream's buffer, not ours.
    private func startStream(_ stream: AsyncStream<RequestRouter.StreamLine>, _ context: ChannelHandlerContext) {
        waiting.removeAll()
        let channel = context.channel
        streamWriter = Task {
            do {
                for await line in stream {
                    try await channel.writeAndFlush(ByteBuffer(bytes: line.encoded))
                }
            } catch {}  // a failed write: the client is gone
            channel.close(promise: nil)
        }
        if readHeld {
            readHeld = false
            context.read()
        }
    }

    /// One line saying why, then the close once it is written.
    private func refuse(_ frame: LineFrame, _ context: ChannelHandlerContext) {
        refused = true
        waiting.removeAll()
        let refusal = frame == .tooLarge
            ? TokendError(.tooLarge, "a request line may be at most \(LineFramer.maximumLineLength) bytes; closing")
            : TokendError(.badRequest, "more than \(LineFramingChannelHandler.maximumEmptyLinesInARow) empty lines in a row; closing")
        reply(Response.failure(refusal), context).assumeIsolated().whenComplete { _ in context.close(promise: nil) }
    }
}
