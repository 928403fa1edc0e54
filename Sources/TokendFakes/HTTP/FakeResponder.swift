import Foundation
import HTTPTypes
import HummingbirdCore
import NIOCore
import NIOHTTP1
import NIOPosix
import TokendCore
import TokendProviders

/// What a fake is to the one connection layer: its fault layer, its routes, its request log.
protocol FakeRoutes: Sendable {
    var faults: FaultLayer { get }
    /// The answer to a complete request, by the fake's own rules.
    func handle(_ request: IncomingRequest) async -> Decision
    /// A fault the fake plays itself on this request (the fake Firebase's token endpoint, which
    /// logs the token presented and cuts a real-looking answer); nil: the shared rules play it.
    func play(_ fault: FakeFault, for request: IncomingRequest) -> Decision?
    /// Logs in the fake's own terms a request that a fault or the scripted answerer answered (a
    /// `refuse`d one without its body), with the status sent if a complete answer went out. (The
    /// fault layer logs every request anyway: `FaultLayer.requests`.)
    func logAnswered(_ request: IncomingRequest, fault: FakeFault?, status: Int?)
    /// Waits `seconds` of real time; throws when the task is cancelled (its connection closed).
    func pause(_ seconds: Double) async throws
}

extension FakeRoutes {
    func play(_ fault: FakeFault, for request: IncomingRequest) -> Decision? { nil }

    func logAnswered(_ request: IncomingRequest, fault: FakeFault?, status: Int?) {}

    func pause(_ seconds: Double) async throws { try await Task.sleep(for: .milliseconds(Int64(saturating: seconds * 1000))) }
}

/// The one connection layer of every fake: the fault layer and the control plane's faults
/// first, then the fake's routes, served over loopback (Hummingbird, `respond`) or in-process
/// through the providers' HTTP transport (`exchange`, no socket), with the same decisions.
struct FakeResponder: Sendable {
    /// A fake's requests are a few hundred bytes; a test double must not buffer without bound.
    static let maximumBodyBytes = 1 << 20
    /// How long `hang` holds a connection: longer than any client deadline in the tests, and
    /// shutting the fake down cancels it anyway.
    static let hangSeconds = 24.0 * 3600

    let routes: any FakeRoutes

    /// Decides a complete request: the control plane's faults, the scripted answerer, an injected
    /// fault (`fault`, taken at the head), else the fake's own answer.
    func decide(_ request: IncomingRequest, fault: FaultSchedule.Entry?) async -> Decision {
        let faults = routes.faults
        faults.record(request)
        if request.path == ControlWire.prefix + "/faults" { return Decision(action: .reply(faults.control(request))) }
        if let reply = faults.scriptedAnswer(to: request) {
            routes.logAnswered(request, fault: nil, status: reply.status)
            return Decision(action: .reply(reply))
        }
        guard let fault else { return await routes.handle(request) }
        var decision: Decision
        if case .delay(let seconds) = fault.fault {
            decision = await routes.handle(request)
            decision.delay += seconds
        } else if let played = routes.play(fault.fault, for: request) {
            decision = played
        } else {
            decision = Decision(action: fault.fault.action())
            let status: Int? = if case .reply(let reply) = decision.action, fault.fault.answersCompletely { reply.status } else { nil }
            routes.logAnswered(request, fault: fault.fault, status: status)
        }
        decision.delay += fault.late
        return decision
    }

    // MARK: - Loopback

    func respond(to request: HummingbirdCore.Request, writer: consuming ResponseWriter, channel: any Channel) async throws {
        let target = request.head.path ?? "/"
        let path = Self.path(of: target)
        let closeAfter = request.headers[.connection]?.lowercased() == "close"
        var headers: [String: String] = [:]
        for field in request.headers { headers[field.name.canonicalName] = field.value }
        var incoming = IncomingRequest(method: request.method.rawValue, target: target, headers: headers, body: [])
        // Decided at the head, before the body is read, so that `refuse` can act on it.
        let fault = routes.faults.take(for: path)
        if fault?.fault == .refuse {
            routes.faults.record(incoming)
            routes.logAnswered(incoming, fault: .refuse, status: nil)
            try await Self.reset(channel)
            throw Abandoned()
        }
        var request = request
        do {
            incoming.body = Array(buffer: try await request.collectBody(upTo: Self.maximumBodyBytes))
        } catch {
            // Hummingbird answers an over-long body with a 413 error of its own; ours says the same
            // in the fake's words, then closes, as the body was not read to its end.
            try await write(.text(413, "Request body too large"), closing: true, to: writer)
            throw Abandoned()
        }
        let decision = await decide(incoming, fault: fault)
        if decision.delay > 0 { try await routes.pause(decision.delay) }
        switch decision.action {
        case .reply(let reply):
            try await write(reply, closing: closeAfter, to: writer)
        case .drop:
            try await channel.close()
            throw Abandoned()
        case .hang:
            try await routes.pause(Self.hangSeconds)
            throw Abandoned()
        case .dropMidResponse(let reply):
            // The head announces the full length; half the body follows, then the connection closes.
            var body = try await writer.writeHead(Self.head(of: reply, closing: false))
            try await body.write(ByteBuffer(bytes: reply.body.prefix(reply.body.count / 2)))
            try await channel.close()
            throw Abandoned()
        case .trickle(let reply):
            var body = try await writer.writeHead(Self.head(of: reply, closing: false))
            for byte in reply.body {
                try await body.write(ByteBuffer(bytes: [byte]))
                try await routes.pause(FakeFault.trickleInterval)
            }
            // Never reached within a test's deadline; the client gives up first.
            throw Abandoned()
        }
    }

    /// Thrown after the connection was closed, reset or left behind on purpose: Hummingbird then
    /// closes the connection without writing anything more.
    struct Abandoned: Error {}

    /// In-process, a connection reset or closed before a complete answer: the transport reports
    /// it as the network failure a socket would have given.
    struct ConnectionCut: Error, CustomStringConvertible {
        var description: String { "connection closed by the in-process fake" }
    }

    private func write(_ reply: Reply, closing: Bool, to writer: consuming ResponseWriter) async throws {
        var body = try await writer.writeHead(Self.head(of: reply, closing: closing))
        try await body.write(ByteBuffer(bytes: reply.body))
        try await body.finish(nil)
    }

    /// The head for `reply`: its status with the usual reason phrase, content type, length and
    /// extra headers (sorted, so replies are byte-for-byte repeatable).
    static func head(of reply: Reply, closing: Bool) -> HTTPResponse {
        let reason = HTTPResponseStatus(statusCode: reply.status).reasonPhrase
        var fields = HTTPFields()
        fields[.contentType] = reply.contentType
        fields[.contentLength] = String(reply.body.count)
        for (name, value) in reply.extraHeaders.sorted(by: { $0.key < $1.key }) {
            if let name = HTTPField.Name(name) { fields.append(HTTPField(name: name, value: value)) }
        }
        if closing { fields[.connection] = "close" }
        return HTTPResponse(status: .init(code: reply.status, reasonPhrase: reason), headerFields: fields)
    }

    /// Closes with an RST instead of a FIN (SO_LINGER 0), as a refused or crashed peer would.
    private static func reset(_ channel: any Channel) async throws {
        if let socket = channel as? any SocketOptionProvider {
            try? await socket.setSoLinger(linger(l_onoff: 1, l_linger: 0)).get()
        }
        try await channel.close()
    }

    // MARK: - In-process

    /// One exchange through the providers' transport seam (`HTTPTransport(exchange:)`): the same
    /// decision as over loopback, and each way of not answering as the client would meet it
    /// there (a reset or a cut answer a network failure; a hang or a trickle waits until the
    /// transport's deadline cancels it).
    func exchange(_ request: TokendProviders.HTTPRequest) async throws -> HTTPAnswer {
        // The authority names nothing in-process: every request goes to this fake.
        let afterScheme = request.url.split(separator: "://", maxSplits: 1).last ?? ""
        let target = afterScheme.firstIndex(of: "/").map { String(afterScheme[$0...]) } ?? "/"
        var headers: [String: String] = [:]
        for (name, value) in request.headers { headers[name.lowercased()] = value }
        let incoming = IncomingRequest(method: request.method.rawValue, target: target, headers: headers, body: request.body ?? [])
        let fault = routes.faults.take(for: incoming.path)
        let cut = ConnectionCut()
        if fault?.fault == .refuse {
            routes.faults.record(incoming)
            routes.logAnswered(incoming, fault: .refuse, status: nil)
            throw cut
        }
        let decision = await decide(incoming, fault: fault)
        if decision.delay > 0 { try await routes.pause(decision.delay) }
        switch decision.action {
        case .reply(let reply):
            var headers = ["content-type": reply.contentType, "content-length": String(reply.body.count)]
            for (name, value) in reply.extraHeaders { headers[name.lowercased()] = value }
            return HTTPAnswer(status: reply.status, headers: headers, body: reply.body)
        case .drop, .dropMidResponse:
            throw cut
        case .hang, .trickle:
            try await routes.pause(Self.hangSeconds)
            throw cut
        }
    }

    /// The providers' transport, every exchange of which this fake answers in-process.
    func transport(deadline: Double, clock: any WallClock) -> HTTPTransport {
        HTTPTransport(environment: [:], deadline: deadline, clock: clock) { request in try await exchange(request) }
    }

    // MARK: - Request target

    static func path(of uri: String) -> String {
        let raw = uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
        return raw.removingPercentEncoding ?? raw
    }

    static func query(of uri: String) -> [String: String] {
        let parts = uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        return parts.count > 1 ? FormEncoding.decode(parts[1]) : [:]
    }
}
