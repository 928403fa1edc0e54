import Testing
import TokendCore

@Suite struct RegistryHostClaimTests {
    @Test(arguments: [
        ("registry.example.com", "registry.example.com"),
        ("https://registry.example.com", "registry.example.com"),
        ("https://registry.example.com/v2/", "registry.example.com"),
        ("Registry.Example.COM:443", "registry.example.com"),
        ("127.0.0.1:5000", "127.0.0.1:5000"),
        ("http://127.0.0.1:5000", "127.0.0.1:5000"),
        ("https://index.docker.io/v1/", "index.docker.io"),
        ("[::1]:5000", "[::1]:5000"),
    ])
    func everyWayAToolNamesARegistryComesToHostAndPort(text: String, host: String) {
        #expect(RegistryHostClaim(text)?.host == host)
    }

    @Test(arguments: ["", "https://", "user@registry.example.com", "registry example.com", ":5000", "reg\u{0}istry"])
    func whatNamesNoRegistryIsRefused(text: String) {
        #expect(RegistryHostClaim(text) == nil)
    }

    @Test func theClaimingAccountAnswersAndAPortIsPartOfTheName() {
        let claims = [(account: "b", hosts: ["registry.example.com"]), (account: "a", hosts: ["registry.example.com", "127.0.0.1:5000"])]
        #expect(RegistryHostClaim.account(for: "https://registry.example.com", claims: claims) == "a", "ties go to the first name")
        #expect(RegistryHostClaim.account(for: "127.0.0.1:5000", claims: claims) == "a")
        #expect(RegistryHostClaim.account(for: "127.0.0.1:5001", claims: claims) == nil)
        #expect(RegistryHostClaim.account(for: "127.0.0.1", claims: claims) == nil)
        #expect(RegistryHostClaim.account(for: "other.example.com", claims: claims) == nil)
    }
}
