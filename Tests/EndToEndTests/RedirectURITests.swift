import Foundation
import Testing
import TokendFakes
import TokendProviders
import TokendTestSupport

/// Issue 33, item 2: what README tells users to register is byte for byte what tokend sends
/// (but for the port) and what tokenctl's waiting line names: the GitHub stand-in and the
/// Microsoft one (a tenant as `oidc.entra`) record the `redirect_uri` of a real sign-in.
@Suite(.serialized) struct RedirectURITests {
    /// README's rows between the marker and the first line that is not a row: provider → URI.
    static func registered() throws -> [String: String] {
        let text = try String(contentsOf: Repository.root.appendingPathComponent("README.md"), encoding: .utf8)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let start = try require(lines.firstIndex { $0.hasPrefix("<!-- redirect-uris") }, "README.md has no redirect-uris table")
        var rows: [String: String] = [:]
        for line in lines[(start + 3)...] {
            guard line.hasPrefix("|") else { break }
            let cells = line.dropFirst().dropLast().components(separatedBy: " | ").map { $0.trimmingCharacters(in: .whitespaces) }
            rows[cells[0]] = cells[1]
        }
        return rows
    }

    @Test(arguments: [FederatedStandIn.Family.github, .microsoft])
    func theRedirectURIInTheReadmeIsTheOneTokendSends(_ family: FederatedStandIn.Family) async throws {
        let row = family == .github ? "`github.com`" : "`oidc.NAME` for a Microsoft Entra tenant"
        let uri = try #require(try Self.registered()[row], "README has no row \(row)").trimmingCharacters(in: CharacterSet(charactersIn: "`"))
        try await IdentityProviderTests().withStandIn(family) { world, standIn in
            var sent: String?
            let id = family == .github ? "github.com" : IdentityProviderTests.entra
            let login = try await OIDCMockTests.tokenctlSigningIn(world, ["login", "work", "--idp", id]) { url in
                sent = URLComponents(string: url)?.queryItems?.first { $0.name == "redirect_uri" }?.value
                standIn.approveNext(as: .init(id: "redirect-1", email: "redirect@example.com"))
                let http = HTTPTransport(environment: [:])
                let approved = try await http.send(.get(url)).get()
                if let location = approved.headers["location"] { _ = try await http.send(.get(location)).get() }
                await http.shutdown()
            }
            #expect(login.status == 0, "\(login.output)")
            let withoutPort = try #require(sent).replacing(/:\d+\//, with: "/")
            #expect(withoutPort == uri, "tokend sent \(sent ?? "nothing"); README says \(uri)")
            #expect(login.output.contains("redirect URI \(uri), any port"), "tokenctl names another URI: \(login.output)")
        }
    }
}
