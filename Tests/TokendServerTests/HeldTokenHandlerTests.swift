import Foundation
import NIOCore
import NIOEmbedded
import Testing
import TokendCore
import TokendProtocol
@testable import TokendServer
import TokendTestSupport

/// The event loop's fast path (`HeldTokenHandler`, `RequestHandler.answerAtOnce`) on an
/// EmbeddedChannel: what it answers itself, what it forwards, and that replies never overtake
/// one another.
@Suite struct HeldTokenHandlerTests {
    static let expiry = ManualClock().now().addingTimeInterval(3600)
    static let held = TokenGrant(token: "held-token", kind: .id, expiresAt: expiry)

    func channel(holding grant: TokenGrant? = held) throws -> (EmbeddedChannel, StubEngine) {
        var script = StubEngine.Script()
        script.held = grant
        let stub = StubbedHandler(script)
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(HeldTokenHandler(stub.handler))
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        return (channel, stub.engine)
    }

    func send(_ line: String, to channel: EmbeddedChannel) throws {
        try channel.writeInbound(LineFrame.line(Array(line.utf8)))
    }

    /// Lines the connection's task was handed.
    func forwarded(_ channel: EmbeddedChannel) throws -> [String] {
        var lines: [String] = []
        while let frame = try channel.readInbound(as: LineFrame.self) {
            guard case .line(let bytes) = frame else { Issue.record("unexpected \(frame)"); continue }
            lines.append(String(decoding: bytes, as: UTF8.self))
        }
        return lines
    }

    /// Replies written to the client, decoded.
    func replies(_ channel: EmbeddedChannel) throws -> [Response] {
        var responses: [Response] = []
        while var buffer = try channel.readOutbound(as: ByteBuffer.self) {
            let bytes = buffer.readBytes(length: buffer.readableBytes) ?? []
            responses.append(try JSONDecoder().decode(Response.self, from: Data(bytes.dropLast())))
        }
        return responses
    }

    /// The connection's task writing its reply, as NIOAsyncChannel does (through the pipeline).
    func taskReplies(_ channel: EmbeddedChannel, id: Int) throws {
        try channel.writeOutbound(ByteBuffer(bytes: WireCoding.encodeLine(Response(id: .number(Double(id))))))
    }

    @Test func aHeldTokenIsAnsweredOnTheEventLoopAsTheEngineWould() throws {
        let (channel, engine) = try channel()
        try send(#"{"op":"token","id":7,"account":"work","min_valid":60}"#, to: channel)
        #expect(try forwarded(channel).isEmpty)
        let reply = try #require(try replies(channel).first)
        #expect(reply.ok && reply.id == .number(7))
        #expect(reply.token == "held-token" && reply.kind == .id && reply.account == "work")
        #expect(reply.expiresAt == Timestamp.format(Self.expiry) && reply.expiresIn == 3600)
        #expect(engine.calls.isEmpty, "the engine was not asked")
    }

    /// No held token, a narrowed token, anything but `token`, and lines that are not requests:
    /// all go to the task, which answers them (errors included) as before.
    @Test(arguments: [
        #"{"op":"token","id":1,"account":"work","scope":"a"}"#, #"{"op":"hello","id":1}"#,
        #"{"op":"status","id":1}"#, #"{"op":"token","id":1}"#, "not json", #"{"op":"nope","id":1}"#,
    ])
    func whatTheFastPathCannotAnswerIsForwarded(_ line: String) throws {
        let (channel, _) = try channel()
        try send(line, to: channel)
        #expect(try forwarded(channel) == [line])
        #expect(try replies(channel).isEmpty)
    }

    @Test func withNothingHeldATokenRequestIsForwarded() throws {
        let (channel, _) = try channel(holding: nil)
        let line = #"{"op":"token","id":1,"account":"work"}"#
        try send(line, to: channel)
        #expect(try forwarded(channel) == [line])
    }

    /// A token request behind a forwarded one waits its turn: answering it at once would put
    /// its reply before the earlier request's. Once that reply is out, the fast path resumes.
    @Test func aReplyNeverOvertakesAnEarlierRequests() throws {
        let (channel, _) = try channel()
        let token = #"{"op":"token","id":2,"account":"work"}"#
        try send(#"{"op":"status","id":1}"#, to: channel)
        #expect(try forwarded(channel).count == 1)
        try taskReplies(channel, id: 1)
        #expect(try replies(channel).map(\.id) == [.number(1)])
        try send(token, to: channel)
        #expect(try forwarded(channel).isEmpty, "the status reply was out: answered at once")
        #expect(try replies(channel).map(\.id) == [.number(2)])
        // Two lines before the first reply: neither may be answered here, nor anything after.
        try send(#"{"op":"status","id":3}"#, to: channel)
        try send(token, to: channel)
        #expect(try forwarded(channel).count == 2)
        try taskReplies(channel, id: 3)
        try taskReplies(channel, id: 2)
        try send(token, to: channel)
        #expect(try forwarded(channel) == [token], "lost count once two were owed: forwards for good")
    }

    /// A client that does not read its replies is left to the task, whose writes wait for it;
    /// and since that line was not read here (it may be a `watch`), so is everything after it.
    @Test func aClientNotReadingItsRepliesIsForwardedForGood() throws {
        let (channel, _) = try channel()
        let token = #"{"op":"token","id":1,"account":"work"}"#
        channel.isWritable = false
        try send(token, to: channel)
        #expect(try forwarded(channel) == [token])
        channel.isWritable = true
        try taskReplies(channel, id: 1)
        try send(token, to: channel)
        #expect(try forwarded(channel) == [token])
    }

    /// After `watch` (or `login`, or `account`) the task owns the connection: a token line sent
    /// then must not put a reply between the stream's events.
    @Test(arguments: [#"{"op":"watch","id":1}"#, #"{"op":"login","id":1,"account":"work","method":"device"}"#, #"{"op":"account","id":1,"account":"work","action":"show"}"#])
    func afterAStreamEverythingIsForwarded(_ opening: String) throws {
        let (channel, _) = try channel()
        try send(opening, to: channel)
        try taskReplies(channel, id: 1)
        _ = try replies(channel)
        let token = #"{"op":"token","id":2,"account":"work"}"#
        try send(token, to: channel)
        #expect(try forwarded(channel) == [opening, token])
        #expect(try replies(channel).isEmpty)
    }
}
