import NIOCore
import TokendProtocol

/// Answers a plain `token` request on the event loop when the account already holds a token
/// that meets it (`RequestHandler.answerAtOnce`), so the common request costs no task, no actor
/// hop and no thread hand-off; every other line goes on to the connection's task as before.
///
/// Replies stay in request order: a line is answered here only while no forwarded line is still
/// owed its reply (each non-stream request gets exactly one line back, and this handler sees it
/// go out). Once that cannot be tracked — a stream began, or lines arrived while one was owed, or
/// while the client's replies piled up unread (the channel not writable, where the task's writes
/// wait for it) — the connection forwards everything for the rest of its life.
final class HeldTokenHandler: ChannelDuplexHandler {
    typealias InboundIn = LineFrame
    typealias InboundOut = LineFrame
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let handler: RequestHandler
    /// Forwarded requests whose reply has not gone out yet: at most one while this handler answers.
    private var repliesOwed = 0
    private var forwardsEverything = false

    init(_ handler: RequestHandler) {
        self.handler = handler
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if !forwardsEverything, repliesOwed == 0, context.channel.isWritable, case .line(let line) = unwrapInboundIn(data) {
            switch handler.answerAtOnce(line: line) {
            case .answer(let response):
                context.writeAndFlush(wrapOutboundOut(ByteBuffer(bytes: WireCoding.encodeLine(response))), promise: nil)
                return
            case .forward(let startsStream):
                forwardsEverything = startsStream
            }
        } else {
            // Forwarded unread (one was owed, or the client is not reading): it may start a stream.
            forwardsEverything = true
        }
        repliesOwed += 1
        context.fireChannelRead(data)
    }

    /// A reply from the connection's task on its way out.
    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        repliesOwed = max(0, repliesOwed - 1)
        context.write(data, promise: promise)
    }
}
