import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix

/// A small OAuth 2.0 / OpenID Connect server on 127.0.0.1 for what oidc-provider-mock lacks: a
/// revocation endpoint that records the client authentication it got, the device grant with every
/// polling answer, scripted token answers (rotation, `expires_in` as a string or missing) and a
/// discovery document whose issuer can be wrong. Every request is recorded.
public final class FakeOIDC: Sendable {
    public struct Request: Sendable {
        public var method: String
        public var path: String
        public var authorization: String?
        public var form: [String: String]
    }

    public struct Answer: Sendable {
        public var status: Int
        public var body: String

        public init(status: Int = 200, body: String) {
            self.status = status
            self.body = body
        }

        public static func json(_ status: Int = 200, _ object: [String: any Sendable]) -> Answer {
            let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
            return Answer(status: status, body: String(decoding: data, as: UTF8.self))
        }
    }

    struct State {
        var requests: [Request] = []
        /// Answers for the token endpoint, used in order; when empty a fresh token is issued.
        var tokenAnswers: [Answer] = []
        var issuerOverride: String?
        var counter = 0
    }

    public let port: Int
    private let channel: any Channel
    private let state: NIOLockedValueBox<State>

    public var issuer: String { "http://127.0.0.1:\(port)" }

    private init(port: Int, channel: any Channel, state: NIOLockedValueBox<State>) {
        self.port = port
        self.channel = channel
        self.state = state
    }

    public static func start() async throws -> FakeOIDC {
        let state = NIOLockedValueBox(State())
        let portBox = NIOLockedValueBox(0)
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { child in
                child.eventLoop.makeCompletedFuture {
                    try child.pipeline.syncOperations.configureHTTPServerPipeline()
                    try child.pipeline.syncOperations.addHandler(FakeOIDCHandler(state: state, port: portBox))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        let port = channel.localAddress?.port ?? 0
        portBox.withLockedValue { $0 = port }
        return FakeOIDC(port: port, channel: channel, state: state)
    }

    public func shutdown() async {
        try? await channel.close()
    }

    public var requests: [Request] { state.withLockedValue { $0.requests } }
    public func script(_ answers: [Answer]) { state.withLockedValue { $0.tokenAnswers += answers } }
    public func claimIssuer(_ issuer: String) { state.withLockedValue { $0.issuerOverride = issuer } }
}

private final class FakeOIDCHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    let state: NIOLockedValueBox<FakeOIDC.State>
    let port: NIOLockedValueBox<Int>
    var head: HTTPRequestHead?
    var body = ByteBuffer()

    init(state: NIOLockedValueBox<FakeOIDC.State>, port: NIOLockedValueBox<Int>) {
        self.state = state
        self.port = port
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            body.clear()
        case .body(var chunk):
            body.writeBuffer(&chunk)
        case .end:
            guard let head else { return }
            let text = body.readString(length: body.readableBytes) ?? ""
            let request = FakeOIDC.Request(
                method: head.method.rawValue, path: String(head.uri.prefix { $0 != "?" }),
                authorization: head.headers.first(name: "authorization"), form: FormEncoding.decode(Substring(text)))
            let answer = route(request)
            var headers = HTTPHeaders()
            headers.add(name: "Content-Type", value: "application/json")
            headers.add(name: "Content-Length", value: String(answer.body.utf8.count))
            context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .init(statusCode: answer.status), headers: headers))), promise: nil)
            context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(string: answer.body)))), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        }
    }

    func route(_ request: FakeOIDC.Request) -> FakeOIDC.Answer {
        let base = "http://127.0.0.1:\(port.withLockedValue { $0 })"
        return state.withLockedValue { state in
            state.requests.append(request)
            switch request.path {
            case "/.well-known/openid-configuration":
                return .json(200, [
                    "issuer": state.issuerOverride ?? base, "token_endpoint": base + "/token", "revocation_endpoint": base + "/revoke",
                    "device_authorization_endpoint": base + "/device", "authorization_endpoint": base + "/authorize", "jwks_uri": base + "/jwks",
                ])
            case "/token":
                if !state.tokenAnswers.isEmpty { return state.tokenAnswers.removeFirst() }
                state.counter += 1
                return .json(200, ["access_token": "fake-access-\(state.counter)", "expires_in": 3600, "token_type": "Bearer"])
            case "/revoke":
                return FakeOIDC.Answer(status: 200, body: "")
            case "/device":
                return .json(200, [
                    "device_code": "device-code-1", "user_code": "WDJB-MJHT", "verification_url": base + "/activate", "expires_in": "600", "interval": 1,
                ])
            default:
                return .json(404, ["error": "not_found"])
            }
        }
    }
}
