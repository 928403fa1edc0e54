import Foundation
import NIOCore
import NIOEmbedded
import Testing
import TokendCore
import TokendProtocol
@testable import TokendServer
import TokendTestSupport

/// A connection served on its event loop (`ConnectionChannelHandler`) on a testing channel: what the loop
/// answers itself, what goes to the engine, that replies keep request order, back-pressure, the
/// stream's takeover and the end of input.
@Suite struct ConnectionChannelHandlerTests {
    static let expiry = ManualClock().now().addingTimeInterval(3600)
    static let held = TokenGrant(token: "held-token", kind: .id, expiresAt: expiry)

    func channel(_ script: StubEngine.Script = heldScript()) async throws -> (NIOAsyncTestingChannel, StubEngine) {
        let stub = StubbedHandler(script)
        let handler = stub.handler
        let channel = try await NIOAsyncTestingChannel { try $0.pipeline.syncOperations.addHandler(ConnectionChannelHandler(handler)) }
        try await channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1))
        return (channel, stub.engine)
    }

    static func heldScript(_ grant: TokenGrant? = held) -> StubEngine.Script {
        var script = StubEngine.Script()
        script.held = grant
        script.statuses = .success([])
        return script
    }

    func send(_ line: String, to channel: NIOAsyncTestingChannel) async throws {
        try await channel.writeInbound(LineFrame.line(Array(line.utf8)))
    }

    /// The next line written to the client, decoded (waits for the engine's task if need be).
    func nextReply(_ channel: NIOAsyncTestingChannel) async throws -> Response {
        var buffer = try await channel.waitForOutboundWrite(as: ByteBuffer.self)
        let bytes = buffer.readBytes(length: buffer.readableBytes) ?? []
        #expect(bytes.last == UInt8(ascii: "\n"))
        return try JSONDecoder().decode(Response.self, from: Data(bytes.dropLast()))
    }

    @Test func aHeldTokenIsAnsweredOnTheEventLoopAsTheEngineWould() async throws {
        let (channel, engine) = try await channel()
        try await send(#"{"op":"token","id":7,"account":"work","min_valid":60}"#, to: channel)
        let reply = try await nextReply(channel)
        #expect(reply.ok && reply.id == .number(7))
        #expect(reply.token == "held-token" && reply.kind == .id && reply.account == "work")
        #expect(reply.expiresAt == Timestamp.format(Self.expiry) && reply.expiresIn == 3600)
        #expect(engine.calls.isEmpty, "the engine was not asked")
    }

    @Test func helloIsAnsweredOnTheEventLoop() async throws {
        let (channel, engine) = try await channel()
        try await send(#"{"op":"hello","id":"h"}"#, to: channel)
        let reply = try await nextReply(channel)
        #expect(reply.ok && reply.id == .string("h") && reply.protocol == protocolVersion)
        #expect(engine.calls.isEmpty)
    }

    /// No held token, a narrowed token, anything else, and lines that are not requests: the
    /// engine's side answers them (errors included), each with exactly one line.
    @Test func whatTheLoopCannotAnswerIsAnsweredThroughTheEngine() async throws {
        let (channel, engine) = try await channel(Self.heldScript(nil))
        try await send(#"{"op":"status","id":1}"#, to: channel)
        #expect(try await nextReply(channel).id == .number(1))
        try await send(#"{"op":"token","id":2,"account":"work","scope":"a"}"#, to: channel)
        #expect(try await nextReply(channel).id == .number(2))
        try await send("not json", to: channel)
        let refusal = try await nextReply(channel)
        #expect(!refusal.ok && refusal.error?.code == .badRequest)
        #expect(engine.calls.count == 2, "\(engine.calls)")
    }

    /// The request the accept loop decoded and could not answer comes with the connection, and is
    /// asked as it is: no line of it is read again, and the lines behind it wait for its reply.
    @Test func aCarriedRequestIsAskedFirstWithoutItsLine() async throws {
        let stub = StubbedHandler(Self.heldScript(nil))
        let handler = stub.handler
        let carried = WireCoding.decodeRequest(Array(#"{"op":"status","id":1,"account":"work"}"#.utf8))
        let channel = try await NIOAsyncTestingChannel {
            try $0.pipeline.syncOperations.addHandler(ConnectionChannelHandler(handler, carried: carried))
        }
        try await channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1))
        try await send(#"{"op":"hello","id":2}"#, to: channel)
        #expect(try await nextReply(channel).id == .number(1))
        #expect(try await nextReply(channel).id == .number(2))
        #expect(stub.engine.calls == [.statuses(account: "work")])
    }

    /// A token request behind one that went to the engine waits its turn: answered at once, its
    /// reply would overtake the earlier one's.
    @Test func aReplyNeverOvertakesAnEarlierRequests() async throws {
        let (channel, _) = try await channel()
        try await send(#"{"op":"status","id":1}"#, to: channel)
        try await send(#"{"op":"token","id":2,"account":"work"}"#, to: channel)
        try await send(#"{"op":"hello","id":3}"#, to: channel)
        try await send(#"{"op":"status","id":4}"#, to: channel)
        var ids: [RequestID?] = []
        for _ in 0..<4 { ids.append(try await nextReply(channel).id) }
        #expect(ids == [.number(1), .number(2), .number(3), .number(4)])
    }

    /// A client that reads none of its replies: nothing more is answered (or read) until it does.
    @Test func aClientNotReadingItsRepliesIsNotAnsweredUntilItReads() async throws {
        let (channel, _) = try await channel()
        channel.isWritable = false
        try await send(#"{"op":"token","id":1,"account":"work"}"#, to: channel)
        #expect(try await channel.readOutbound(as: ByteBuffer.self) == nil)
        channel.isWritable = true
        channel.pipeline.fireChannelWritabilityChanged()
        #expect(try await nextReply(channel).id == .number(1))
    }

    /// After `login` the stream owns the connection: a token line sent then gets no reply between
    /// the stream's lines, and the connection closes when the stream ends.
    @Test func afterAStreamBeginsInputIsIgnored() async throws {
        var script = Self.heldScript()
        script.loginSteps = [.waiting("the browser")]
        script.signIn = .success(LoginSummary(expiresAt: Self.expiry, signInProvider: "oidc"))
        let (channel, _) = try await channel(script)
        try await send(#"{"op":"login","id":1,"account":"work","method":"browser"}"#, to: channel)
        try await send(#"{"op":"token","id":2,"account":"work"}"#, to: channel)
        try await channel.closeFuture.get()
        var lines: [String] = []
        while var buffer = try await channel.readOutbound(as: ByteBuffer.self) {
            lines.append(buffer.readString(length: buffer.readableBytes) ?? "")
        }
        #expect(lines.count == 2 && lines.allSatisfy { !$0.contains(#""id":2"#) }, "\(lines)")
    }

    /// End of input (a client's half-close, or the daemon stopping) closes the connection once
    /// every line read is answered, the one with the engine included.
    @Test func endOfInputClosesOnceEveryLineIsAnswered() async throws {
        let (channel, _) = try await channel()
        try await send(#"{"op":"status","id":1}"#, to: channel)
        try await send(#"{"op":"hello","id":2}"#, to: channel)
        channel.pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        try await channel.closeFuture.get()
        #expect(try await nextReply(channel).id == .number(1))
        #expect(try await nextReply(channel).id == .number(2))
    }

    @Test(arguments: [LineFrame.tooLarge, .emptyLineFlood])
    func aBrokenFrameIsRefusedWithOneLineThenClosed(_ frame: LineFrame) async throws {
        let (channel, _) = try await channel()
        try await channel.writeInbound(frame)
        try await channel.closeFuture.get()
        let reply = try await nextReply(channel)
        #expect(!reply.ok && reply.error?.code == (frame == .tooLarge ? .tooLarge : .badRequest))
    }
}
