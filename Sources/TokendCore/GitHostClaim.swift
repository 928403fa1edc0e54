/// One entry of an account's `git_hosts`: a host (with an optional port) and an optional path
/// prefix, such as `git.example.com`, `git.example.com:8443` or `github.com/my-org`. It tells
/// `tokenctl git-credential` which account answers for a repository URL.
public struct GitHostClaim: Sendable, Equatable {
    /// `https`, or `http` for a claim written `http://` for a loopback host: a token must not
    /// cross a network in clear, so a claim without a scheme never answers git's `http`.
    public var scheme: String
    /// Lower-cased `host` or `host:port`, as git sends it in `host=`.
    public var host: String
    /// Path components the repository path must start with; empty claims the whole host.
    public var pathPrefix: [Substring]

    /// Parses `[https://|http://]host[:port][/path…]` with an optional trailing slash; nil when
    /// there is no host, it contains white space, or it says `http://` for a host that is not
    /// loopback.
    public init?(_ text: String) {
        var rest = Substring(text.trimmed)
        var scheme = "https"
        for prefix in ["https", "http"] where rest.lowercased().hasPrefix(prefix + "://") {
            rest = rest.dropFirst(prefix.count + 3)
            scheme = prefix
            break
        }
        let parts = rest.split(separator: "/", omittingEmptySubsequences: true)
        guard let host = parts.first, !host.contains(where: \.isWhitespace), !host.contains("@") else { return nil }
        let name = host.hasPrefix("[") ? host.dropFirst().prefix { $0 != "]" } : host.prefix { $0 != ":" }
        guard scheme == "https" || LoopbackHost.contains(name) else { return nil }
        self.scheme = scheme
        self.host = host.lowercased()
        pathPrefix = Array(parts.dropFirst())
    }

    /// How well this claim matches git's `protocol=`, `host=` and `path=` (nil: not at all). A
    /// longer path prefix is a better match, so `github.com/my-org` beats `github.com`. A claim
    /// with a path cannot match when git sends no path (`credential.useHttpPath` is off).
    public func specificity(protocol requestProtocol: String, host requestHost: String, path: String?) -> Int? {
        guard requestProtocol.lowercased() == scheme, requestHost.lowercased() == host else { return nil }
        guard !pathPrefix.isEmpty else { return 0 }
        guard let path else { return nil }
        let components = path.split(separator: "/", omittingEmptySubsequences: true)
        guard components.count >= pathPrefix.count else { return nil }
        for (claimed, actual) in zip(pathPrefix, components) {
            // Git hosts treat `Org/Repo.git` and `org/repo.git` alike; so does a claim.
            guard claimed.lowercased() == actual.lowercased() else { return nil }
        }
        return pathPrefix.count
    }

    /// The account whose claims best match `host` and `path`; ties go to the first name in
    /// alphabetical order, so the answer does not depend on dictionary order.
    public static func bestAccount(protocol: String, host: String, path: String?, claims: [(account: String, hosts: [String])]) -> String? {
        var best: (account: String, score: Int)?
        for (account, hosts) in claims.sorted(by: { $0.account < $1.account }) {
            for text in hosts {
                guard let claim = GitHostClaim(text), let score = claim.specificity(protocol: `protocol`, host: host, path: path) else { continue }
                if score > best?.score ?? -1 { best = (account, score) }
            }
        }
        return best?.account
    }
}
