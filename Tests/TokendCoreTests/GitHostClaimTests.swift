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
        #expect(GitHostClaim.bestAccount(host: "git.example.com", path: "someone/repo.git", claims: claims) == "work")
        #expect(GitHostClaim.bestAccount(host: "git.example.com", path: "my-org/repo.git", claims: claims) == "org")
        #expect(GitHostClaim.bestAccount(host: "GIT.example.com", path: "My-Org/team/x.git", claims: claims) == "team")
        #expect(GitHostClaim.bestAccount(host: "git.example.com", path: "my-organisation/x.git", claims: claims) == "work")
        #expect(GitHostClaim.bestAccount(host: "git.example.com", path: nil, claims: claims) == "work")
        #expect(GitHostClaim.bestAccount(host: "other.example.com", path: nil, claims: claims) == nil, "the port is part of the host")
        #expect(GitHostClaim.bestAccount(host: "other.example.com:8443", path: nil, claims: claims) == "other")
        #expect(GitHostClaim.bestAccount(host: "nobody.example.com", path: "x", claims: claims) == nil)
        #expect(GitHostClaim.bestAccount(host: "h", path: nil, claims: [("b", ["h"]), ("a", ["h"])]) == "a", "ties: first name")
    }
}
