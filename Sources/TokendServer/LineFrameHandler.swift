import NIOCore
import TokendProtocol

/// What the connection loop reads: complete lines, or the news that the client broke the cap.
public enum LineFrame: Sendable, Equatable {
    case line([UInt8])
    case tooLarge
    /// More empty lines in a row than any client has a reason to send.
    case emptyLineFlood
}

/// Frames a connection's bytes into JSON Lines with `LineFramer`'s 64 KiB cap, and cuts a client
/// that stalls in the middle of a line (it holds a buffer and a descriptor for nothing). A client
/// idle between lines is fine: `watch` and long-lived clients are.
final class LineFrameHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = LineFrame

    /// Empty lines in a row a connection may send before it is cut. A person at `socat` presses
    /// Enter a few times; a flood of newlines (which used to cost the daemon a core for minutes)
    /// is refused after this many, while each one costs only a byte comparison.
    static let maximumEmptyLinesInARow = 1024

    private var framer = LineFramer(keepsEmptyLines: true)
    private var broken = false
    private var emptyLinesInARow = 0

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !broken else { return }
        let buffer = unwrapInboundIn(data)
        framer.append(buffer.readableBytesView)
        do {
            while let line = try framer.nextLine() {
                guard line.isEmpty else {
                    emptyLinesInARow = 0
                    context.fireChannelRead(wrapInboundOut(.line(line)))
                    continue
                }
                emptyLinesInARow += 1
                if emptyLinesInARow > Self.maximumEmptyLinesInARow {
                    broken = true
                    context.fireChannelRead(wrapInboundOut(.emptyLineFlood))
                    return
                }
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
