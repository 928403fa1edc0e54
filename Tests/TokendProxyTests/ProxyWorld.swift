import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization
import Testing
import TokendCore
import TokendTestSupport
@testable import TokendProxy

/// A token source that hands out one fixed token, or one error, and counts the asks.
final class StubTokens: ProxyTokenSource {
    let answer: Result<String, TokendError>
    let asks = Mutex<[String]>([])

    init(_ answer: Result<String, TokendError>) {
        self.answer = answer
    }

    func bearer(account: String, kind: TokenKind?, scope: TokenScope?, minValid: Double, timeout: Double) async -> Result<String, TokendError> {
        asks.withLock { $0.append(account) }
        return answer
    }
}

final class RecordingAudit: ProxyAccess {
    let records = Mutex<[ProxyAuditRecord]>([])
    /// Consumers whose peers are refused at accept, and the reason.
    let refusing = Mutex<[String: String]>([:])
    func record(_ record: ProxyAuditRecord) { records.withLock { $0.append(record) } }
    func admit(_ peer: ProxyPeer, consumer: String) -> (peer: ProxyPeer, refusal: String?) { (peer, refusing.withLock { $0[consumer] }) }
}

/// A plain HTTP upstream on loopback (the proxy allows plain HTTP there): answers every request
/// with what it received, one `name: value` line per header field, then the body's byte count.
final class EchoUpstream: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart
    var head: HTTPRequestHead?
    var bytes = 0

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            bytes = 0
        case .body(let buffer):
            bytes += buffer.readableBytes
        case .end:
            if head?.uri == "/redirect" {
                // A redirect elsewhere: the proxy must pass it back, never follow it with the token.
                let headers = HTTPHeaders([("Location", "http://elsewhere.example.net/"), ("Content-Length", "0")])
                context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .found, headers: headers))), promise: nil)
                context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
                return
            }
            var text = "target: \(head?.uri ?? "")\n"
            for (name, value) in head?.headers ?? HTTPHeaders() { text += "\(name): \(value)\n" }
            text += "bytes: \(bytes)\n"
            var buffer = context.channel.allocator.buffer(capacity: text.utf8.count)
            buffer.writeString(text)
            let headers = HTTPHeaders([("Content-Length", "\(buffer.readableBytes)"), ("Content-Type", "text/plain")])
            context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers))), promise: nil)
            context.write(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        }
    }

    static func start() async throws -> any Channel {
        try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(EchoUpstream())
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
    }
}

/// A proxy for consumer `agent` on a free loopback port, an echo upstream, a stub token source.
struct ProxyWorld {
    let supervisor: ProxySupervisor
    let upstream: any Channel
    let tokens: StubTokens
    let audit: RecordingAudit
    let proxyPort: Int
    var upstreamPort: Int { upstream.localAddress?.port ?? 0 }

    static func with<T>(
        token: Result<String, TokendError> = .success("stub-token-123"), extraUpstreams: [ProxyUpstreamSettings] = [],
        _ body: (ProxyWorld) async throws -> T
    ) async throws -> T {
        let upstream = try await EchoUpstream.start()
        let tokens = StubTokens(token)
        let audit = RecordingAudit()
        let supervisor = ProxySupervisor(tokens: tokens, audit: audit, logger: Logger(label: "proxy-test"))
        await supervisor.start()
        let upstreamPort = upstream.localAddress?.port ?? 0
        // Port 0: the kernel picks a free one as the proxy binds. (A port probed free and handed
        // over could be taken by then: two worlds started together were once given the same one.)
        let problems = await supervisor.apply([
            ProxySettings(
                consumer: "agent", listen: .tcp(host: "127.0.0.1", port: 0),
                upstreams: [ProxyUpstreamSettings(origin: ProxyOrigin(secure: false, host: "127.0.0.1", port: upstreamPort), account: "work")] + extraUpstreams)
        ])
        #expect(problems.isEmpty, "\(problems)")
        let port = await supervisor.running["agent"]?.localAddress?.port ?? 0
        let world = ProxyWorld(supervisor: supervisor, upstream: upstream, tokens: tokens, audit: audit, proxyPort: port)
        do {
            let result = try await body(world)
            await supervisor.stop()
            try? await upstream.close()
            return result
        } catch {
            await supervisor.stop()
            try? await upstream.close()
            throw error
        }
    }

    /// Sends raw bytes to the proxy and reads its answer to the end (on a thread of its own: the
    /// read blocks).
    func exchange(_ request: [UInt8]) async throws -> String {
        let port = proxyPort
        return try await withCheckedThrowingContinuation { continuation in
            Thread {
                do {
                    let fd = try LoopbackSocket.connect(port: port)
                    defer { close(fd) }
                    continuation.resume(returning: try Self.talk(fd, request))
                } catch {
                    continuation.resume(throwing: error)
                }
            }.start()
        }
    }

    func exchange(_ request: String) async throws -> String { try await exchange(Array(request.utf8)) }

    /// Writes `request` whole on a connected socket, then reads the answer until the proxy closes.
    /// Waits for it up to `Patience.seconds`: LoopbackSocket's 20 s receive timeout once ended the
    /// 2.4 MB upload's read inside the whole suite, where the proxy's tasks wait for a busy
    /// cooperative pool, with an empty answer that read as the proxy closing without one.
    static func talk(_ fd: Int32, _ request: [UInt8]) throws -> String {
        var timeout = timeval(tv_sec: Int(Patience.seconds), tv_usec: 0)  // conversion: a constant, 120
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var sent = 0
        while sent < request.count {
            // MSG_NOSIGNAL: a proxy that closed first (the cap) must not SIGPIPE the test process.
            let count = request.withUnsafeBytes { send(fd, $0.baseAddress! + sent, $0.count - sent, Int32(MSG_NOSIGNAL)) }
            if count <= 0 { break }
            sent += count
        }
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0, errno == EAGAIN {
                throw NoAnswer(description: "the proxy neither answered nor closed within \(Patience.seconds) s (\(answer.count) bytes read)")
            }
            if count <= 0 { break }
            answer += buffer[0..<count]
        }
        return String(decoding: answer, as: UTF8.self)
    }

    struct NoAnswer: Error, CustomStringConvertible {
        var description: String
    }

    /// The same over a Unix socket at `path`.
    static func exchange(unixSocket path: String, _ request: String) async throws -> String {
        try await withCheckedThrowingContinuation { continuation in
            Thread {
                let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)  // conversion: a C constant
                defer { close(fd) }
                var address = sockaddr_un()
                address.sun_family = sa_family_t(AF_UNIX)
                withUnsafeMutableBytes(of: &address.sun_path) { raw in
                    for (index, byte) in path.utf8.prefix(raw.count - 1).enumerated() { raw[index] = byte }
                }
                let connected = withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
                }
                guard connected == 0 else { return continuation.resume(throwing: POSIXError(.ECONNREFUSED)) }
                continuation.resume(with: Result { try Self.talk(fd, Array(request.utf8)) })
            }.start()
        }
    }
}

extension Trait where Self == ConditionTrait {
    /// Only in scripts/test's step after the whole suite (TOKEND_ALONE=1): the proxy's heavy
    /// streaming tests, which held the test process for ~100 s inside it (stop 54).
    static var alone: Self {
        .enabled(if: ProcessInfo.processInfo.environment["TOKEND_ALONE"] == "1", "runs alone: scripts/test sets TOKEND_ALONE=1")
    }
}
