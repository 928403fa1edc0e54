import Testing
import TokendCore

@Suite struct GitHostClaimTests {
    @Test func parsesHostPortAndPath() throws {
        let claim = try #require(GitHostClaim("https://Git.Example.com:8443/My-Org/"))
        #expect(claim.host == "git.example.com:8443")
        #expect(claim.pathPrefix == ["My-Org"])
        #expect(GitHostClaim("") == nil)
        #expect(GitHostClaim("has space") == nil)
        #expect(GitHostClaim("user@host") == nil)
    }

    @Test func matchesWholeComponentsAndPrefersTheLongestPrefix() {
        let claims: [(account: String, hosts: [String])] = [
            ("work", ["git.example.com"]), ("org", ["git.example.com/my-org"]), ("team", ["git.example.com/my-org/team"]),
            ("other", ["other.example.com:8443"]),
        ]
        #expect(GitHostClaim.bestAccount(protocol: "https", host: "git.example.com", path: "someone/repo.git", claims: claims) == "work")
        #expect(GitHostClaim.bestAccount(protocol: "https", host: "git.example.com", path: "my-org/repo.git", claims: claims) == "org")
        #expect(GitHostClaim.bestAccount(protocol: "https", host: "GIT.example.com", path: "My-Org/team/x.git", claims: claims) == "team")
        #expect(GitHostClaim.bestAccount(protocol: "https", host: "git.example.com", path: "my-organisation/x.git", claims: claims) == "work")
        #expect(GitHostClaim.bestAccount(protocol: "https", host: "git.example.com", path: nil, claims: claims) == "work")
        #expect(GitHostClaim.bestAccount(protocol: "https", host: "other.example.com", path: nil, claims: claims) == nil, "the port is part of the host")
        #expect(GitHostClaim.bestAccount(protocol: "https", host: "other.example.com:8443", path: nil, claims: claims) == "other")
        #expect(GitHostClaim.bestAccount(protocol: "https", host: "nobody.example.com", path: "x", claims: claims) == nil)
        #expect(GitHostClaim.bestAccount(protocol: "https", host: "h", path: nil, claims: [("b", ["h"]), ("a", ["h"])]) == "a", "ties: first name")
    }

    /// The scheme is part of the claim. Before, git's `protocol=http` was answered, and a claim
    /// written `https://` matched `http` too: an http:// remote got the token in clear.
    @Test func plainHTTPIsAnsweredOnlyWhereAClaimSaysSoForALoopbackHost() {
        let claims: [(account: String, hosts: [String])] = [("work", ["https://git.example.com"]), ("local", ["http://127.0.0.1:8080"])]
        #expect(GitHostClaim.bestAccount(protocol: "http", host: "git.example.com", path: nil, claims: claims) == nil)
        #expect(GitHostClaim.bestAccount(protocol: "http", host: "git.example.com", path: nil, claims: [("work", ["git.example.com"])]) == nil)
        #expect(GitHostClaim.bestAccount(protocol: "https", host: "git.example.com", path: nil, claims: claims) == "work")
        #expect(GitHostClaim.bestAccount(protocol: "http", host: "127.0.0.1:8080", path: nil, claims: claims) == "local")
        #expect(GitHostClaim.bestAccount(protocol: "https", host: "127.0.0.1:8080", path: nil, claims: claims) == nil)
        #expect(GitHostClaim("http://git.example.com") == nil, "plain http to a host off the machine is not a claim")
        #expect(GitHostClaim("http://[::1]:3000")?.scheme == "http")
        #expect(GitHostClaim("git.example.com")?.scheme == "https")
    }
}
