import Foundation
import Testing
import TokendCore
import TokendProtocol
import TokendTestSupport

/// `tokenctl logout` on an OIDC account, through the real tokend: the refresh token reaches the
/// provider's revocation endpoint with the account's client authentication, then the session goes.
@Suite(.serialized) struct OIDCRevocationTests {
    @Test func logoutRevokesAtTheProviderWithBasicAuth() async throws {
        try await withFakeOIDCAccount(clientSecret: "client-secret-canary") { world, fake in
            let refreshToken = "refresh-token-canary-\(fake.port)"
            let imported = try await world.tokenctl(["import", "corp"], stdin: refreshToken + "\n")
            #expect(imported.status == 0, "\(imported.stderr)")
            let token = try await world.tokenctl(["token", "corp"])
            #expect(token.status == 0 && token.stdout.hasPrefix("fake-access-"))

            let logout = try await world.tokenctl(["logout", "corp"])
            #expect(logout.status == 0, "\(logout.stderr)")
            #expect(logout.stdout == "corp logged out; the session was revoked at the provider\n")
            let revoke = try #require(fake.requests.last { $0.path == "/revoke" })
            #expect(revoke.form["token"] == refreshToken)
            #expect(revoke.authorization == "Basic " + Data("cli:client-secret-canary".utf8).base64EncodedString())
            #expect(try await world.storedSession("corp") == nil)
            let after = try await world.tokenctl(["token", "corp"])
            #expect(after.status == 77)
            for secret in [refreshToken, "client-secret-canary"] {
                #expect(!world.daemonLog.contains(secret), "a secret reached the daemon's log")
            }
        }
    }
}
