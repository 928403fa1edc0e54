import NIOCore
import NIOEmbedded
import Testing
@testable import TokendServer

/// The partial-line clocks of `LineFramingChannelHandler` (issue 8, item 8), on EmbeddedChannel's manual
/// time: `channel.read()` is the daemon asking for more bytes, as `ConnectionChannelHandler` does unless
/// lines wait for answers; not calling it is the daemon's back-pressure.
@Suite struct LineFramingChannelHandlerTests {
    static let limits = LineTimeLimits.standard

    func connectedChannel() throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(LineFramingChannelHandler(limits: Self.limits))
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        return channel
    }

    func send(_ text: String, to channel: EmbeddedChannel) throws {
        try channel.writeInbound(ByteBuffer(string: text))
    }

    func lines(from channel: EmbeddedChannel) throws -> [String] {
        var lines: [String] = []
        while let frame = try channel.readInbound(as: LineFrame.self) {
            guard case .line(let bytes) = frame else { Issue.record("unexpected \(frame)"); continue }
            lines.append(String(decoding: bytes, as: UTF8.self))
        }
        return lines
    }

    /// A pipelining client whose replies pile up: the daemon stops reading, with half a line in
    /// its buffer. However long that lasts, it is not the client's stall; once the daemon reads
    /// again, the client has its whole timeout to deliver the rest.
    @Test func aPartialLineIsNotTimedWhileTheDaemonIsNotReading() throws {
        let channel = try connectedChannel()
        channel.read()
        try send("{\"op\":\"hello\"}\n{\"op\":", to: channel)
        #expect(try lines(from: channel) == ["{\"op\":\"hello\"}"])
        // Back-pressure: no read is asked for, for six timeouts.
        channel.embeddedEventLoop.advanceTime(by: Self.limits.partialLineTimeout * 6)
        #expect(channel.isActive, "cut while the daemon itself was not reading")
        channel.read()
        channel.embeddedEventLoop.advanceTime(by: Self.limits.partialLineTimeout - .milliseconds(1))
        #expect(channel.isActive)
        try send("\"hello\"}\n", to: channel)
        #expect(try lines(from: channel) == ["{\"op\":\"hello\"}"])
        #expect(channel.isActive)
    }

    /// The daemon asks for more, and the rest of a started line never comes: cut at the timeout.
    @Test func aStalledPartialLineIsCutAtTheTimeout() throws {
        let channel = try connectedChannel()
        channel.read()
        try send("{\"op\":", to: channel)
        channel.read()
        channel.embeddedEventLoop.advanceTime(by: Self.limits.partialLineTimeout - .milliseconds(1))
        #expect(channel.isActive)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(2))
        #expect(!channel.isActive, "a stalled half line outlived the timeout")
    }

    /// A client idle between lines is fine, however long: `watch` and long-lived clients are.
    @Test func anIdleClientBetweenLinesIsKept() throws {
        let channel = try connectedChannel()
        channel.read()
        try send("{\"op\":\"hello\"}\n", to: channel)
        channel.read()
        channel.embeddedEventLoop.advanceTime(by: .hours(2))
        #expect(channel.isActive)
    }

    /// A byte every 9 s never meets the 10 s timeout; the line's total wait is bounded instead.
    @Test func aTricklingClientIsCutAtTheLineBound() throws {
        let channel = try connectedChannel()
        let pause = Self.limits.partialLineTimeout - .seconds(1)
        channel.read()
        try send("{", to: channel)
        var waited: TimeAmount = .zero
        while waited + pause < Self.limits.lineTimeBound {
            channel.read()
            channel.embeddedEventLoop.advanceTime(by: pause)
            waited = waited + pause
            #expect(channel.isActive, "cut after \(waited), before the line bound")
            try send(" ", to: channel)
        }
        channel.read()
        channel.embeddedEventLoop.advanceTime(by: Self.limits.lineTimeBound - waited)
        #expect(!channel.isActive, "a client trickling a byte every \(pause) was never cut")
    }

    /// The bound is per line: a client that finishes each line before it is spent starts the
    /// next line with the whole bound again.
    @Test func theLineBoundStartsAgainWithEachLine() throws {
        let channel = try connectedChannel()
        let pause = Self.limits.partialLineTimeout - .seconds(1)
        for _ in 0..<5 {
            channel.read()
            try send("{\"op\":", to: channel)
            channel.read()
            channel.embeddedEventLoop.advanceTime(by: pause)
            try send("\"he", to: channel)
            channel.read()
            channel.embeddedEventLoop.advanceTime(by: pause)
            try send("llo\"}\n", to: channel)
            #expect(try lines(from: channel) == ["{\"op\":\"hello\"}"])
        }
        #expect(channel.isActive)
    }

    /// The client half-closes after a last line without its newline: that line is passed on
    /// before the end of input, so it is answered like any other.
    @Test func aLastLineWithoutItsNewlineIsPassedOnAtEndOfInput() throws {
        let channel = try connectedChannel()
        channel.read()
        try send("{\"op\":\"hello\"}\n{\"op\":\"list\"}", to: channel)
        #expect(try lines(from: channel) == ["{\"op\":\"hello\"}"])
        channel.pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        #expect(try lines(from: channel) == ["{\"op\":\"list\"}"])
        // Nothing is pending any more: no clock runs for the closed input.
        channel.read()
        channel.embeddedEventLoop.advanceTime(by: Self.limits.lineTimeBound * 2)
        #expect(channel.isActive)
    }
}
