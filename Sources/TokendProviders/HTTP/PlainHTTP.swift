import FoundationEssentials
import TokendCore
/// Where plain HTTP may carry refresh tokens: loopback only, unless an account's configuration
/// says `allow_plain_http = true` (an emulator on another machine of a trusted network).
public enum PlainHTTP {
    public static let optInKey = "allow_plain_http"

    /// The host part of `host`, `host:port`, `[v6]:port` or a URL's authority.
    public static func host(ofAuthority authority: Substring) -> Substring {
        let hostAndPort = authority.split(separator: "@").last ?? authority
        if hostAndPort.hasPrefix("[") {
            return hostAndPort.dropFirst().prefix { $0 != "]" }
        }
        return hostAndPort.prefix { $0 != ":" }
    }

    /// The host of an `http://` URL; nil when `url` is not plain HTTP.
    public static func host(ofURL url: String) -> Substring? {
        guard url.lowercased().hasPrefix("http://") else { return nil }
        let rest = url.dropFirst("http://".count)
        return host(ofAuthority: rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" })
    }

    /// `localhost`, an address in 127.0.0.0/8, or `::1` (LoopbackHost).
    public static func isLoopback(_ host: Substring) -> Bool { LoopbackHost.contains(host) }

    /// https, or plain http to a loopback host (or anywhere when the account opts in). The host
    /// checked must be the host the HTTP client will connect to: a URL that URL parsing reads
    /// otherwise (`http://127.0.0.1:1\\@evil/`) is refused rather than guessed at.
    public static func isAcceptableURL(_ url: String, allowPlainHTTP: Bool) -> Bool {
        if url.lowercased().hasPrefix("https://") { return true }
        guard let host = host(ofURL: url) else { return false }
        if allowPlainHTTP { return true }
        guard let parsed = URL(string: url)?.host(percentEncoded: false) else { return false }
        let parsedHost = parsed.hasPrefix("[") ? String(parsed.dropFirst().dropLast()) : parsed
        return parsedHost.lowercased() == host.lowercased() && isLoopback(host)
    }

    /// Highest TCP port.
    static let highestPort = 65_535

    /// `host[:port]` exactly, as the emulator setting and FIREBASE_AUTH_EMULATOR_HOST are written:
    /// a DNS name or IPv4 address, or an IPv6 address in brackets, and a decimal port 1…65535.
    /// Nil for anything else (a path, user info, a scheme, white space): what is checked is
    /// then exactly what is put in the URL.
    public static func hostAndPort(_ text: String) -> (host: Substring, port: Int?)? {
        let text = Substring(text)
        let host: Substring
        let rest: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            host = text[text.index(after: text.startIndex)..<close]
            guard !host.isEmpty, host.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }) else { return nil }
            rest = text[text.index(after: close)...]
        } else {
            host = text.prefix { $0 != ":" }
            guard !host.isEmpty, host.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == ".") }) else { return nil }
            rest = text[host.endIndex...]
        }
        if rest.isEmpty { return (host, nil) }
        let digits = rest.dropFirst()
        guard rest.first == ":", !digits.isEmpty, digits.count <= 5, digits.allSatisfy({ $0.isASCII && $0.isNumber }),
            let port = Int(digits), (1...highestPort).contains(port)  // conversion: a failable parse of at most five digits
        else { return nil }
        return (host, port)
    }
}
