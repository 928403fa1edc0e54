import NIOHTTP1
#if canImport(Glibc)
import Glibc
#endif

/// Every size and time the proxy bounds, with its reason. A request that passes them is forwarded
/// as it came; one that does not is refused with a status that names the bound.
public enum ProxyBounds {
    /// The request line's target and each header field (name and value): 8 KiB, nginx's per-line
    /// limit; a longer URL or field would be refused by the APIs behind such servers anyway (431).
    /// NIO's decoder counts the target as a field and keeps an unfinished one in its buffer,
    /// so this also bounds what a connection holds before its head is complete.
    public static let maximumHeaderField = 8 * 1024
    /// The target and all header fields together: 32 KiB, nginx's four 8 KiB buffers; a bearer
    /// token of a few KiB that the proxy adds fits well beside them (431).
    public static let maximumHeaderBytes = 32 * 1024
    /// 100 fields, Apache's limit; real clients send about ten (431).
    public static let maximumHeaderCount = 100
    /// A host name is at most 253 bytes (RFC 1035); with brackets and a port, 300.
    public static let maximumHostLength = 300
    /// A CA bundle: Debian's whole system bundle is ~220 KiB; 1 MiB refuses a wrong file.
    public static let maximumCAFileSize = 1024 * 1024
    /// Request body chunks held between the client's socket and the upstream's: reading from the
    /// client stops above 8 (each at most one 64 KiB socket read), so an upload holds < 1 MiB.
    public static let bodyHighWatermark = 8
    public static let bodyLowWatermark = 2
    /// Connecting to an upstream: 10 s, the providers' deadline (HTTPTransport); a TLS upstream on
    /// a LAN or the internet connects in well under a second.
    public static let connectTimeout: Int64 = 10
    /// Silence on the upstream connection while a response is awaited or streamed: 5 minutes, so
    /// a long-running API call or a slow download still passes, while a dead upstream is let go.
    public static let readTimeout: Int64 = 300
    /// Silence from a client that has no request in flight (before its first, between two):
    /// 60 s, nginx's `client_header_timeout`; a kept-alive client reconnects at once.
    public static let idleTimeout: Int64 = 60
    /// Connections one proxy serves at once: 128, far above a client's pool (python requests
    /// keeps 10), so that a runaway client cannot take the daemon's descriptors from its socket.
    public static let maximumConnections = 128
    /// The token must outlive the request by this much (seconds): the engine refreshes first if
    /// it would not. A minute, the `token` op's default: an API call answers well within it.
    public static let tokenMinValid: Double = 60
    /// The wait for a token (a refresh in flight, a keyring read): the `token` op's own default.
    public static let tokenTimeout: Double = 30

    /// The decoder's limits, from the bounds above.
    static var decoderLimits: NIOHTTPDecoderLimitConfiguration {
        var limits = NIOHTTPDecoderLimitConfiguration()
        limits.maxHeaderFieldSize = maximumHeaderField
        limits.maxHeaderListSize = maximumHeaderBytes
        limits.maxHeaderFieldCount = maximumHeaderCount
        return limits
    }
}

/// Small files the proxy reads from the configuration (CA bundles), with a size bound.
enum ProxyFiles {
    /// The file's bytes, or nil when it cannot be read or holds more than `limit` bytes.
    static func read(_ path: String, limit: Int) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else { return nil }
            if count == 0 { return bytes }
            bytes.append(contentsOf: chunk.prefix(count))
            if bytes.count > limit { return nil }
        }
    }
}
