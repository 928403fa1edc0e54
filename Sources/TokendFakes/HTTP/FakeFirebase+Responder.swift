import Foundation
import HTTPTypes
import HummingbirdCore
import NIOCore
import NIOHTTP1
import NIOPosix

/// The connection layer on Hummingbird's HTTP/1.1 server: turns each exchange into calls on the
/// backend and performs what it decides, including the ways of not answering that faults ask for.
/// It writes through Hummingbird's `ResponseWriter` (head and body parts one by one), so a reply
/// can be cut short or trickled; the two faults that must not answer at all (`refuse`, `drop`)
/// close the connection itself, which is the one thing an HTTP framework has no verb for.
struct FakeFirebaseResponder: Sendable {
    /// Firebase requests are a few hundred bytes; a test double must not buffer without bound.
    static let maximumBodyBytes = 1 << 20
    /// How long `hang` holds a connection: longer than any client deadline in the tests, and
    /// shutting the fake down cancels it anyway.
    static let hangSeconds = 24.0 * 3600

    let backend: FakeFirebase.Backend

    func respond(to request: HummingbirdCore.Request, writer: consuming ResponseWriter, channel: any Channel) async throws {
        let target = request.head.path ?? "/"
        let path = Self.path(of: target)
        let method = request.method.rawValue
        let closeAfter = request.headers[.connection]?.lowercased() == "close"
        // Decided at the head, before the body is read, so that `refuse` can act on it.
        let fault = backend.takeFault(for: Route(path: path))
        if fault == .refuse {
            backend.logRefused(method: method, path: path)
            try await Self.reset(channel)
            throw Abandoned()
        }
        var request = request
        let body: ByteBuffer
        do {
            body = try await request.collectBody(upTo: Self.maximumBodyBytes)
        } catch {
            // Hummingbird answers an over-long body with a 413 error of its own; ours says the same
            // in the fake's words, then closes, as the body was not read to its end.
            try await write(.text(413, "Request body too large"), closing: true, to: writer)
            throw Abandoned()
        }
        let query = Self.query(of: target)
        let incoming = IncomingRequest(
            method: method, path: path, query: query,
            apiKey: query["key"] ?? request.headers[HTTPField.Name("x-goog-api-key")!],
            contentType: request.headers[.contentType],
            body: Array(buffer: body))
        let decision = backend.handle(incoming, fault: fault)
        if decision.delay > 0 { try await backend.pause(decision.delay) }
        switch decision.action {
        case .reply(let reply):
            try await write(reply, closing: closeAfter, to: writer)
        case .drop:
            try await channel.close()
            throw Abandoned()
        case .hang:
            try await backend.pause(Self.hangSeconds)
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
                try await backend.pause(FakeFirebase.trickleInterval)
            }
            // Never reached within a test's deadline; the client gives up first.
            throw Abandoned()
        }
    }

    /// Thrown after the connection was closed, reset or left behind on purpose: Hummingbird then
    /// closes the connection without writing anything more.
    struct Abandoned: Error {}

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
