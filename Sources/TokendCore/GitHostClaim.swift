/// One entry of an account's `git_hosts`: a host (with an optional port) and an optional path
/// prefix, such as `git.example.com`, `git.example.com:8443` or `github.com/my-org`. It tells
/// `tokenctl git-credential` which account answers for a repository URL.
public struct GitHostClaim: Sendable, Equatable {
    /// Lower-cased `host` or `host:port`, as git sends it in `host=`.
    public var host: String
    /// Path components the repository path must start with; empty claims the whole host.
    public var pathPrefix: [Substring]

    /// Parses `host[:port][/path…]`, tolerating a leading `https://` or `http://` and a
    /// trailing slash; nil when there is no host or it contains white space.
    public init?(_ text: String) {
        var rest = Substring(text.trimmed)
        for scheme in ["https://", "http://"] where rest.lowercased().hasPrefix(scheme) {
            rest = rest.dropFirst(scheme.count)
        }
        let parts = rest.split(separator: "/", omittingEmptySubsequences: true)
        guard let host = parts.first, !host.contains(where: \.isWhitespace), !host.contains("@") else { return nil }
        self.host = host.lowercased()
        pathPrefix = Array(parts.dropFirst())
    }

    /// How well this claim matches git's `host=` and `path=` (nil: not at all). A longer path
    /// prefix is a better match, so `github.com/my-org` beats `github.com`. A claim with a path
    /// cannot match when git sends no path (`credential.useHttpPath` is off).
    public func specificity(host requestHost: String, path: String?) -> Int? {
        guard requestHost.lowercased() == host else { return nil }
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
    public static func bestAccount(host: String, path: String?, claims: [(account: String, hosts: [String])]) -> String? {
        var best: (account: String, score: Int)?
        for (account, hosts) in claims.sorted(by: { $0.account < $1.account }) {
            for text in hosts {
                guard let claim = GitHostClaim(text), let score = claim.specificity(host: host, path: path) else { continue }
                if score > best?.score ?? -1 { best = (account, score) }
            }
        }
        return best?.account
    }
}
