import Foundation
import Testing
import TokendCore
import TokendProtocol
import TokendFakes
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

/// A logout waits for the provider's revocation; a user action issued meanwhile wins. Before,
/// the logout deleted the keyring item unconditionally once the revocation returned, wiping the
/// session an import had stored meanwhile (held only in memory, lost at the next restart).
@Suite(.serialized) struct LogoutRaceTests {
    @Test func anImportDuringASlowLogoutSurvivesARestart() async throws {
        try await withFakeOIDCAccount(clientSecret: "secret") { world, fake in
            let old = "old-refresh-\(fake.port)"
            #expect(try await world.tokenctl(["import", "corp"], stdin: old + "\n").status == 0)
            fake.script([.init(status: 200, body: "")], for: "/revoke", delay: 4)
            let output = world.keyring.root.appendingPathComponent("logout.out").path
            let logout = try ChildProcess.start(IntegrationTests.tokenctlPath, ["logout", "corp"], environment: world.environment, output: output)
            defer { ChildProcess.stop(logout) }
            try await poll("the logout reached the provider's revocation") { fake.requests.contains { $0.path == "/revoke" } }
            let new = "new-refresh-\(fake.port)"
            let imported = try await world.tokenctl(["import", "corp"], stdin: new + "\n")
            #expect(imported.status == 0, "\(imported.stderr)")
            var status: Int32?
            try await poll("the logout finished") {
                status = ChildProcess.exitStatusIfEnded(logout)
                return status != nil
            }
            #expect(status == 0)
            let said = try String(contentsOfFile: output, encoding: .utf8)
            #expect(said.contains("signed it in again") && !said.contains("corp logged out"), "\(said)")
            #expect(try await world.storedSession("corp")?.refreshToken == new)
            _ = world.stopDaemon()
            try await world.startDaemon()
            let token = try await world.tokenctl(["token", "corp"])
            #expect(token.status == 0, "the imported session is served after a restart: \(token.stderr)")
            #expect(fake.refreshGrants.last?.form["refresh_token"] == new)
        }
    }
}

/// A stored session is bound to every URL that receives its refresh token. Before, only the
/// issuer and client were bound: pointing `token_endpoint` elsewhere and reloading sent the
/// stored refresh token to the new URL.
@Suite(.serialized) struct EndpointBindingTests {
    @Test func aChangedTokenEndpointGetsNoRefreshTokenUntilChangedBack() async throws {
        try await withFakeOIDCAccount { world, fake in
            let refreshToken = "bound-refresh-\(fake.port)"
            #expect(try await world.tokenctl(["import", "corp"], stdin: refreshToken + "\n").status == 0)
            let elsewhere = try await FakeOIDC.start()
            try await withTearDown(elsewhere, tearDown: { await $0.shutdown() }) { elsewhere in
                let original = "[account.corp]\nprovider = \"oidc\"\nissuer = \"\(fake.issuer)\"\nclient_id = \"cli\"\n"
                try world.writeConfig(original + "token_endpoint = \"\(elsewhere.issuer)/token\"\n")
                world.signalDaemon(SIGHUP)
                try await poll("the reload sets the session aside") { (try? await world.status("corp"))?.state != "active" }
                let refresh = try await world.tokenctl(["refresh", "corp"])
                #expect(refresh.status == 78, "\(refresh.status) \(refresh.stderr)")
                #expect(elsewhere.requests.isEmpty, "the new token endpoint got \(elsewhere.requests.map(\.path))")
                #expect(try await world.storedSession("corp")?.refreshToken == refreshToken, "nothing is deleted")
                try world.writeConfig(original)
                world.signalDaemon(SIGHUP)
                try await poll("the session serves again") { try await world.tokenctl(["refresh", "corp"]).status == 0 }
                #expect(elsewhere.requests.isEmpty)
            }
        }
    }
}
