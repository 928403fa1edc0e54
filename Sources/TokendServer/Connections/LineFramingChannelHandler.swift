import NIOCore
import TokendProtocol

/// What the connection loop reads: complete lines, or the news that the client broke the cap.
public enum LineFrame: Sendable, Equatable {
    case line([UInt8])
    case tooLarge
    /// More empty lines in a row than any client has a reason to send.
    case emptyLineFlood
}

/// How long the daemon waits for the rest of a line it has started reading. Both clocks run only
/// while the daemon wants to read: a pipelining client whose replies pile up unread pauses the
/// daemon's reading (back-pressure), and that wait is the daemon's, not the client's.
public struct LineTimeLimits: Sendable, Equatable {
    /// A client that sends part of a line and then nothing for this long is cut: it holds a
    /// buffer and a descriptor for nothing. Ten seconds is far beyond any pause inside one write
    /// of a real client, even on a loaded machine.
    public var partialLineTimeout: TimeAmount
    /// The most the daemon waits for one line, summed over all its pauses: without it a client
    /// trickling a byte every 9 s would never meet the timeout above. A real client writes a line
    /// (at most 64 KiB) at once; three timeouts' worth leaves room for a loaded machine only.
    public var lineTimeBound: TimeAmount

    public init(partialLineTimeout: TimeAmount, lineTimeBound: TimeAmount) {
        self.partialLineTimeout = partialLineTimeout
        self.lineTimeBound = lineTimeBound
    }

    public static let standard = LineTimeLimits(partialLineTimeout: .seconds(10), lineTimeBound: .seconds(30))
}

/// Frames a connection's bytes into JSON Lines with `LineFramer`'s 64 KiB cap, and cuts a client
/// that stalls in the middle of a line (`LineTimeLimits`). A client idle between lines is fine:
/// `watch` and long-lived clients are.
///
/// "The daemon wants to read" is a `read` event passing outward through this handler with no
/// bytes arrived since: `ConnectionChannelHandler` holds that event back while lines wait for answers.
final class LineFramingChannelHandler: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = LineFrame
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// Empty lines in a row a connection may send before it is cut. A person at `socat` presses
    /// Enter a few times; a flood of newlines (which used to cost the daemon a core for minutes)
    /// is refused after this many, while each one costs only a byte comparison.
    static let maximumEmptyLinesInARow = 1024

    private let limits: LineTimeLimits
    private var framer = LineFramer(keepsEmptyLines: true)
    private var broken = false
    private var emptyLinesInARow = 0
    /// Since when the daemon has been waiting for more of a started line; nil while it is not.
    private var waitingSince: NIODeadline?
    /// The waits of the line being read so far, ended ones only.
    private var waitedOnLine: TimeAmount = .zero
    private var cutOff: Scheduled<Void>?

    init(limits: LineTimeLimits = .standard) {
        self.limits = limits
    }

    func read(context: ChannelHandlerContext) {
        if !broken, waitingSince == nil, framer.pendingByteCount > 0 {
            let now = context.eventLoop.now
            waitingSince = now
            let left = min(limits.partialLineTimeout, limits.lineTimeBound - waitedOnLine)
            cutOff = context.eventLoop.assumeIsolated().scheduleTask(deadline: now + left) { [weak self] in
                guard let self, self.waitingSince != nil else { return }
                context.close(promise: nil)
            }
        }
        context.read()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        stopWaiting(now: context.eventLoop.now)
        guard !broken else { return }
        let buffer = unwrapInboundIn(data)
        framer.append(buffer.readableBytesView)
        frameLines(context: context)
    }

    /// The client closed its side. JSON Lines lets the last line go without its newline
    /// (`printf '{"op":"hello"}' | socat …`): it is a request like any other and gets its answer.
    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .some(.inputClosed) = event as? ChannelEvent {
            stopWaiting(now: context.eventLoop.now)
            if !broken, framer.pendingByteCount > 0 {
                framer.append(CollectionOfOne(UInt8(ascii: "\n")))
                frameLines(context: context)
            }
        }
        context.fireUserInboundEventTriggered(event)
    }

    /// Passes on every complete line the framer holds.
    private func frameLines(context: ChannelHandlerContext) {
        do {
            while let line = try framer.nextLine() {
                waitedOnLine = .zero  // what is left in the framer belongs to a new line
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

    func channelInactive(context: ChannelHandlerContext) {
        stopWaiting(now: context.eventLoop.now)
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        stopWaiting(now: context.eventLoop.now)
    }

    /// Bytes arrived (or the connection ended): the wait is over and counts against the line.
    private func stopWaiting(now: NIODeadline) {
        cutOff?.cancel()
        cutOff = nil
        if let since = waitingSince {
            waitedOnLine = waitedOnLine + (now - since)
            waitingSince = nil
        }
    }
}
