import AsyncHTTPClient
import NIOCore
import NIOHTTP1
import TokendCore
import TokendSystem

/// One HTTP exchange a provider asks for: GET or POST, with a form or JSON body.
public struct HTTPRequest: Sendable {
    public enum Method: String, Sendable { case get = "GET", post = "POST" }

    public var method: Method
    public var url: String
    public var headers: [(String, String)]
    public var body: [UInt8]?

    public init(method: Method, url: String, headers: [(String, String)] = [], body: [UInt8]? = nil) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
    }

    /// A GET that wants JSON back (discovery documents, JWKS).
    public static func get(_ url: String, headers: [(String, String)] = []) -> HTTPRequest {
        HTTPRequest(method: .get, url: url, headers: [("Accept", "application/json")] + headers)
    }

    /// A POST of `application/x-www-form-urlencoded` fields, as OAuth token endpoints take them.
    public static func form(_ url: String, _ fields: [(String, String)], headers: [(String, String)] = []) -> HTTPRequest {
        HTTPRequest(
            method: .post, url: url,
            headers: [("Content-Type", "application/x-www-form-urlencoded"), ("Accept", "application/json")] + headers,
            body: FormEncoding.encode(fields))
    }

    /// A POST of a JSON document.
    public static func json(_ url: String, _ body: [UInt8], headers: [(String, String)] = []) -> HTTPRequest {
        HTTPRequest(method: .post, url: url, headers: [("Content-Type", "application/json"), ("Accept", "application/json")] + headers, body: body)
    }
}

/// What came back. A redirect is returned as it is: it is never followed.
public struct HTTPAnswer: Sendable {
    public var status: Int
    /// Header names lowercased.
    public var headers: [String: String]
    public var body: [UInt8]
    public var retryAfter: Double? { RefreshClassifier.retryAfter(headers["retry-after"]) }

    public init(status: Int, headers: [String: String] = [:], body: [UInt8]) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    public var isRedirect: Bool { (300...399).contains(status) }
}

/// No complete answer: the server could not be reached, did not finish within the deadline, or
/// sent more than we take. Each provider decides what that means for its operation.
public struct TransportFailure: Error, Sendable, Equatable {
    public enum Kind: Sendable, Equatable { case timeout, network, tooLarge }
    public var kind: Kind
    /// Safe to show: never a URL's query (it may carry an API key) nor a body.
    public var message: String

    /// The refresh domain's view: every transport failure is transient.
    public var refreshFailure: RefreshFailure {
        RefreshFailure(code: kind == .timeout ? "timeout" : kind == .tooLarge ? "too_large" : "network", message: message)
    }
}

/// The one HTTP client of the daemon, shared by every provider: a connection pool, the deadline,
/// the response-size cap, the redirect rule and the proxy settings live here and nowhere else.
public final class HTTPTransport: Sendable {
    /// A provider that has not finished answering in 10 s is treated as down (transient); the
    /// daemon keeps serving the held token meanwhile, so waiting longer buys nothing.
    public static let defaultDeadline: Double = 10
    /// Token responses are a few KiB; 1 MiB leaves room for 16 KiB tokens and refuses a runaway body.
    public static let maximumBodySize = 1024 * 1024
    /// A pooled connection idle this long is closed. A burst of calls (accounts refreshing
    /// together, a sign-in's exchanges) still shares connections; and the close comes before the
    /// daemon's idle release (`IdleMemory.quietTick`: 4 s without work, and the event a refresh
    /// ends with is work), not after it: at AsyncHTTPClient's 60 s, closing the pool faulted 3.5 MB of code
    /// back in after the release, where it stayed (issue 47, Benchmarks/results/2026-12-02T0830Z-many.md).
    public static let idleConnectionSeconds: Int64 = 2

    /// Seconds for one whole exchange: connect, head and body. A body trickled a byte at a time
    /// must not hold an account in `refreshing` for longer than this.
    public let deadline: Double
    /// The time of every wait around provider calls: this deadline, device-grant polling, a
    /// browser login's wait, an ID token's validity. A test passes a manual clock.
    public let clock: any WallClock
    public let timers: any TimerSource
    let direct: HTTPClient
    /// Only for https URLs to hosts outside `NO_PROXY`: a loopback server is never proxied.
    let proxied: HTTPClient?
    let noProxy: [String]
    /// The seam for tests: when set, every exchange is this call instead of the network (a fake
    /// served in-process); the deadline still bounds it, and what it throws is a network failure.
    let exchange: (@Sendable (HTTPRequest) async throws -> HTTPAnswer)?

    public init(
        environment: [String: String], deadline: Double = defaultDeadline, clock: any WallClock = SystemWallClock(), timers: (any TimerSource)? = nil,
        exchange: (@Sendable (HTTPRequest) async throws -> HTTPAnswer)? = nil
    ) {
        self.exchange = exchange
        self.deadline = deadline
        self.clock = clock
        self.timers = timers ?? SystemTimerSource(clock: clock)
        func client(proxy: HTTPClient.Configuration.Proxy?) -> HTTPClient {
            var configuration = HTTPClient.Configuration()
            configuration.timeout = .init(connect: .seconds(5), read: .milliseconds(Int64(saturating: deadline * 1000)))
            // A redirect would re-send a refresh token, client secret or API key to wherever the
            // Location points (https → http included): token endpoints never need one.
            configuration.redirectConfiguration = .disallow
            configuration.connectionPool = .init(idleTimeout: .seconds(Self.idleConnectionSeconds))
            configuration.proxy = proxy
            return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        }
        direct = client(proxy: nil)
        proxied = Self.proxy(from: environment).map { client(proxy: $0) }
        noProxy = (environment["NO_PROXY"] ?? environment["no_proxy"] ?? "").split(separator: ",").map { $0.trimmed.lowercased() }
    }

    /// Which client carries a request to `url`: curl's rules, reduced to what matters here
    /// (`NO_PROXY` entries match a host or a domain suffix; `*` disables the proxy).
    func client(for url: String) -> HTTPClient {
        guard let proxied, url.hasPrefix("https://") else { return direct }
        let authority = url.dropFirst("https://".count).prefix { $0 != "/" && $0 != "?" }
        let host = authority.split(separator: ":").first.map { $0.lowercased() } ?? ""
        let bypass = host == "localhost" || host.hasPrefix("127.") || noProxy.contains { entry in
            entry == "*" || host == entry || host.hasSuffix(entry.hasPrefix(".") ? entry : "." + entry)
        }
        return bypass ? direct : proxied
    }

    /// `HTTPS_PROXY` (or `https_proxy`) as an HTTP CONNECT proxy for provider traffic.
    static func proxy(from environment: [String: String]) -> HTTPClient.Configuration.Proxy? {
        guard let value = environment["HTTPS_PROXY"] ?? environment["https_proxy"], !value.isEmpty else { return nil }
        var rest = Substring(value)
        if let scheme = rest.firstRange(of: "://") { rest = rest[scheme.upperBound...] }
        if let slash = rest.firstIndex(of: "/") { rest = rest[..<slash] }
        if let at = rest.lastIndex(of: "@") { rest = rest[rest.index(after: at)...] }
        let parts = rest.split(separator: ":")
        guard let host = parts.first else { return nil }
        let port = parts.count > 1 ? Int(parts[1]) ?? 3128 : 3128  // conversion: a failable parse of a String
        return .server(host: String(host), port: port)
    }

    /// Performs one exchange within `deadline`, head and body together.
    public func send(_ request: HTTPRequest) async -> Result<HTTPAnswer, TransportFailure> {
        var outgoing = HTTPClientRequest(url: request.url)
        outgoing.method = request.method == .get ? .GET : .POST
        for (name, value) in request.headers { outgoing.headers.add(name: name, value: value) }
        if let body = request.body { outgoing.body = .bytes(ByteBuffer(bytes: body)) }
        let prepared = outgoing
        let client = client(for: request.url)
        let seconds = deadline
        let (clock, timers, exchange) = (clock, timers, exchange)
        let timedOut = TransportFailure(kind: .timeout, message: "the provider did not answer within \(Int(saturating: seconds)) s")
        do {
            // The exchange races a timer; whichever ends first cancels the other, and cancelling
            // the exchange closes its connection, so a trickled body cannot outlive the deadline.
            return try await withThrowingTaskGroup(of: HTTPAnswer?.self) { group in
                group.addTask {
                    if let exchange { return try await exchange(request) }
                    let deadline = NIODeadline.now() + .milliseconds(Int64(saturating: seconds * 1000))
                    let response: HTTPClientResponse
                    do {
                        response = try await client.execute(prepared, deadline: deadline)
                    } catch ChannelError.ioOnClosedChannel {
                        // A kept-alive connection the provider closed as we picked it from the
                        // pool: nothing was written, so even a one-use code exchange may go again,
                        // once, on a new connection (seen once under load, oidc-provider-mock).
                        response = try await client.execute(prepared, deadline: deadline)
                    }
                    let bytes = try await response.body.collect(upTo: Self.maximumBodySize)
                    var headers: [String: String] = [:]
                    for (name, value) in response.headers { headers[name.lowercased()] = value }
                    return HTTPAnswer(status: Int(response.status.code), headers: headers, body: Array(buffer: bytes))  // conversion: widening UInt to Int (status codes are < 1000)
                }
                group.addTask {
                    _ = await timers.sleep(until: clock.now().addingTimeInterval(seconds))
                    return nil
                }
                defer { group.cancelAll() }
                guard let first = try await group.next(), let answer = first else { return .failure(timedOut) }
                return .success(answer)
            }
        } catch let error as HTTPClientError where error == .deadlineExceeded || error == .readTimeout || error == .connectTimeout {
            return .failure(timedOut)
        } catch is CancellationError {
            return .failure(timedOut)
        } catch let error as NIOTooManyBytesError {
            _ = error
            return .failure(TransportFailure(kind: .tooLarge, message: "the provider's answer is larger than \(Self.maximumBodySize / 1024) KiB"))
        } catch {
            return .failure(TransportFailure(kind: .network, message: "could not reach the provider: \(Self.describe(error))"))
        }
    }

    /// Error text without URLs: a URL may carry an API key in its query.
    static func describe(_ error: any Error) -> String {
        let text = String(describing: error)
        guard let query = text.firstIndex(of: "?") else { return text }
        return String(text[..<query]) + "…"
    }

    public func shutdown() async {
        try? await direct.shutdown()
        try? await proxied?.shutdown()
    }
}

/// `application/x-www-form-urlencoded` per the WHATWG URL standard: everything but
/// ALPHA / DIGIT / `*-._` is percent-encoded, space as `+`.
public enum FormEncoding {
    public static func encode(_ fields: [(String, String)]) -> [UInt8] {
        var out: [UInt8] = []
        for (index, (name, value)) in fields.enumerated() {
            if index > 0 { out.append(UInt8(ascii: "&")) }
            escape(name, into: &out)
            out.append(UInt8(ascii: "="))
            escape(value, into: &out)
        }
        return out
    }

    public static func escaped(_ text: String) -> String {
        var out: [UInt8] = []
        escape(text, into: &out)
        return String(decoding: out, as: UTF8.self)
    }

    public static func escape(_ text: String, into out: inout [UInt8]) {
        let hex = Array("0123456789ABCDEF".utf8)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "*"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"):
                out.append(byte)
            case UInt8(ascii: " "):
                out.append(UInt8(ascii: "+"))
            default:
                out.append(UInt8(ascii: "%"))
                out.append(hex[Int(byte >> 4)])  // conversion: a nibble
                out.append(hex[Int(byte & 0x0F)])  // conversion: a nibble
            }
        }
    }
}
