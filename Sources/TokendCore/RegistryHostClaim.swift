/// One entry of an account's `registry_hosts`: an OCI registry as `host` or `host:port`, such as
/// `registry.example.com` or `127.0.0.1:5000`. It tells `docker-credential-tokend` which account
/// answers for a registry, however the container tool names it: docker sends `https://host` or
/// `host`, podman and skopeo `host[:port]`, and Docker Hub `https://index.docker.io/v1/`.
public struct RegistryHostClaim: Sendable, Equatable {
    /// Lower-cased `host` or `host:port`; `:443` is dropped (the port HTTPS means anyway).
    public var host: String

    /// Parses `[https://|http://]host[:port][/…]`; nil when there is no host or it holds white
    /// space, `@` or a character no registry name has.
    public init?(_ text: String) {
        var rest = Substring(text.trimmed)
        for prefix in ["https://", "http://"] where rest.lowercased().hasPrefix(prefix) {
            rest = rest.dropFirst(prefix.count)
            break
        }
        let host = rest.prefix { $0 != "/" }.lowercased()
        let allowed = Set("abcdefghijklmnopqrstuvwxyz0123456789.-:[]_")
        guard !host.isEmpty, host.allSatisfy(allowed.contains), !host.hasPrefix(":") else { return nil }
        self.host = host.hasSuffix(":443") ? String(host.dropLast(4)) : host
    }

    /// The account whose claim names the registry of `serverURL` (as the tool sent it); ties go to
    /// the first name in alphabetical order, so the answer does not depend on dictionary order.
    public static func account(for serverURL: String, claims: [(account: String, hosts: [String])]) -> String? {
        guard let wanted = RegistryHostClaim(serverURL) else { return nil }
        return claims.sorted { $0.account < $1.account }.first { $0.hosts.contains { RegistryHostClaim($0) == wanted } }?.account
    }
}
