import NIOCore
import TokendProtocol

/// What the connection loop reads: complete lines, or the news that the client broke the cap.
public enum LineFrame: Sendable, Equatable {
    case line([UInt8])
    case tooLarge
}

/// Frames a connection's bytes into JSON Lines with `LineFramer`'s 64 KiB cap, and cuts a client
/// that stalls in the middle of a line (it holds a buffer and a descriptor for nothing). A client
/// idle between lines is fine: `watch` and long-lived clients are.
final class LineFrameHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = LineFrame

    /// Empty lines are passed on: each costs the connection a turn like any request, so a flood
    /// of newlines meets back-pressure and the timers instead of spinning here.
    private var framer = LineFramer(keepsEmptyLines: true)
    private var broken = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !broken else { return }
        let buffer = unwrapInboundIn(data)
        framer.append(buffer.readableBytesView)
        do {
            while let line = try framer.nextLine() {
                context.fireChannelRead(wrapInboundOut(.line(line)))
            }
        } catch {
            broken = true
            context.fireChannelRead(wrapInboundOut(.tooLarge))
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let idle = event as? IdleStateHandler.IdleStateEvent, idle == .read, framer.pendingByteCount > 0 {
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }
}
