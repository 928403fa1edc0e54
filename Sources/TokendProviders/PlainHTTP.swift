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

    /// `localhost`, an address in 127.0.0.0/8, or `::1`. By the name alone: a name that only
    /// resolves to loopback (an /etc/hosts entry) may not tomorrow.
    public static func isLoopback(_ host: Substring) -> Bool {
        let host = host.lowercased()
        if host == "localhost" || host == "::1" || host == "0:0:0:0:0:0:0:1" { return true }
        let octets = host.split(separator: ".", omittingEmptySubsequences: false)
        guard octets.count == 4, octets[0] == "127" else { return false }
        return octets.allSatisfy { octet in
            !octet.isEmpty && octet.count <= 3 && octet.allSatisfy(\.isASCII) && octet.allSatisfy(\.isNumber) && (Int(octet) ?? 256) <= 255  // conversion: a failable parse of a String
        }
    }

    /// https, or plain http to a loopback host (or anywhere when the account opts in).
    public static func isAcceptableURL(_ url: String, allowPlainHTTP: Bool) -> Bool {
        if url.lowercased().hasPrefix("https://") { return true }
        guard let host = host(ofURL: url) else { return false }
        return allowPlainHTTP || isLoopback(host)
    }
}
