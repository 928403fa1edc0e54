import AsyncHTTPClient
import NIOCore
import NIOHTTP1
import TokendCore

/// The one HTTP client of the daemon, shared by every provider: a connection pool, the request
/// deadline, the response-size cap and the proxy settings live here and nowhere else.
public final class HTTPTransport: Sendable {
    /// A token endpoint that has not answered in 10 s is treated as down (transient); the daemon
    /// keeps serving the held token meanwhile, so waiting longer buys nothing.
    public static let requestTimeout: TimeAmount = .seconds(10)
    /// Token responses are a few KiB; 1 MiB leaves room for 16 KiB tokens and refuses a runaway body.
    public static let maximumBodySize = 1024 * 1024

    public struct Answer: Sendable {
        public var status: Int
        public var body: [UInt8]
        public var retryAfter: Double?
    }

    let direct: HTTPClient
    /// Only for https URLs to hosts outside `NO_PROXY`: a loopback emulator is never proxied.
    let proxied: HTTPClient?
    let noProxy: [String]

    public init(environment: [String: String]) {
        func client(proxy: HTTPClient.Configuration.Proxy?) -> HTTPClient {
            var configuration = HTTPClient.Configuration()
            configuration.timeout = .init(connect: .seconds(5), read: Self.requestTimeout)
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
        let port = parts.count > 1 ? Int(parts[1]) ?? 3128 : 3128
        return .server(host: String(host), port: port)
    }

    /// POSTs a form or JSON body. Transport failures come back as a transient outcome's failure.
    public func post(url: String, headers: [(String, String)], body: [UInt8]) async -> Result<Answer, RefreshFailure> {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        request.body = .bytes(ByteBuffer(bytes: body))
        do {
            let response = try await client(for: url).execute(request, timeout: Self.requestTimeout)
            let bytes = try await response.body.collect(upTo: Self.maximumBodySize)
            let retryAfter = RefreshClassifier.retryAfter(response.headers.first(name: "Retry-After"))
            return .success(Answer(status: Int(response.status.code), body: Array(buffer: bytes), retryAfter: retryAfter))
        } catch let error as HTTPClientError where error == .deadlineExceeded || error == .readTimeout || error == .connectTimeout {
            return .failure(RefreshFailure(code: "timeout", message: "the provider did not answer within \(Self.requestTimeout.nanoseconds / 1_000_000_000) s"))
        } catch {
            return .failure(RefreshFailure(code: "network", message: "could not reach the provider: \(Self.describe(error))"))
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
                out.append(hex[Int(byte >> 4)])
                out.append(hex[Int(byte & 0x0F)])
            }
        }
    }
}
