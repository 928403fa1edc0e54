import Foundation
import Testing
import TokendCore
import TokendProtocol
import TokendTestSupport

/// OpenID Connect accounts against a real third-party provider (oidc-provider-mock), through the
/// real tokend, tokenctl and keyring: discovery, refresh with HTTP Basic client authentication
/// (answers with no new refresh token and no ID token), tokens the provider's `/userinfo`
/// accepts, and a revoked grant ending in `needs_login`.
@Suite(.serialized) struct OIDCMockTests {
    static let clientID = "tokend-test"
    static let clientSecret = "client-secret-canary-31337"

    /// The `corp` account at the mock, with `extra` lines.
    static func account(_ mock: OIDCProviderMock, extra: String = "") -> String {
        """
        [account.corp]
        provider = "oidc"
        issuer = "\(mock.issuer)"
        client_id = "\(clientID)"
        client_secret = "\(clientSecret)"
        \(extra)
        """
    }

    /// A daemon world and the mock, torn down when `body` ends, however it ends.
    func withMock(_ body: (DaemonHarness, OIDCProviderMock) async throws -> Void) async throws {
        let world = try await DaemonHarness.start(accounts: [], startDaemon: false)
        let mock: OIDCProviderMock
        do {
            mock = try await OIDCProviderMock.start(directory: world.keyring.root)
        } catch {
            await world.shutdown()
            throw error
        }
        do {
            try await body(world, mock)
        } catch {
            await Self.tearDown(world, mock)
            throw error
        }
        await Self.tearDown(world, mock)
    }

    /// Stops the daemon off the cooperative pool (it waits for the process), then the rest.
    static func tearDown(_ world: DaemonHarness, _ mock: OIDCProviderMock) async {
        _ = try? await offPool { world.stopDaemon() }
        await mock.stop()
        await world.shutdown()
    }

    @Test func importRefreshUserinfoAndRevocation() async throws {
        try await withMock { world, mock in
            try world.writeConfig(Self.account(mock, extra: "scopes = [\"openid\", \"email\"]"))
            try await world.startDaemon()
            let refreshToken = try await mock.refreshToken(for: "alice", clientID: Self.clientID, clientSecret: Self.clientSecret)

            let imported = try await world.tokenctl(["import", "corp"], stdin: refreshToken + "\n")
            #expect(imported.status == 0, "\(imported.stderr)")

            // The default kind of an OIDC account is the access token, and the provider accepts it.
            let token = try await world.tokenctl(["token", "corp"])
            #expect(token.status == 0, "\(token.stderr)")
            let accessToken = token.stdout.trimmingCharacters(in: .newlines)
            let (status, userinfo) = try await mock.userinfoStatus(accessToken: accessToken)
            #expect(status == 200)
            #expect(userinfo.contains("alice"))

            // Refresh answers carry no new refresh token: the imported one is kept.
            let refreshed = try await world.tokenctl(["refresh", "corp"])
            #expect(refreshed.status == 0, "\(refreshed.stderr)")
            #expect(try await world.storedSession("corp")?.refreshToken == refreshToken)
            let second = try await world.tokenctl(["token", "corp"])
            #expect(second.status == 0 && second.stdout.trimmingCharacters(in: .newlines) != accessToken)

            // Nor an ID token: asking for one is a clear error, never a stale token.
            let id = try await world.tokenctl(["token", "corp", "--kind", "id"])
            #expect(id.status == 64, "\(id.status) \(id.stderr)")
            #expect(id.stdout.isEmpty)
            #expect(id.stderr.contains("id token"))

            // The provider ends the grant: the next refresh says log in again, exit 77.
            try await mock.revokeTokens(of: "alice")
            let revoked = try await world.tokenctl(["refresh", "corp"])
            #expect(revoked.status == 77, "\(revoked.status) \(revoked.stderr)")
            #expect(try await world.status("corp").state == "needs_login")
            let after = try await world.tokenctl(["token", "corp"])
            #expect(after.status == 77)

            let log = world.daemonLog
            for secret in [refreshToken, accessToken, Self.clientSecret] {
                #expect(!log.contains(secret), "a secret reached the daemon's log")
            }
        }
    }

    /// The browser login run by the real tokend (the `login` op): progress lines carry the URL,
    /// the provider's form is driven over HTTP, and the session is then served by tokenctl.
    @Test func browserLoginThroughTheDaemon() async throws {
        try await withMock { world, mock in
            try world.writeConfig(Self.account(mock, extra: "scopes = [\"openid\", \"email\"]"))
            try await world.startDaemon()
            let socketPath = world.socketPath
            let http = mock.http
            let lines: [String] = try await offPool {
                let client = try BlockingClient(path: socketPath)
                client.setReadTimeout(seconds: 60)
                try client.send(.login(account: "corp", method: "browser", timeout: 60))
                var lines: [String] = []
                while true {
                    let line = String(decoding: try client.receiveLine(), as: UTF8.self)
                    lines.append(line)
                    if line.contains("\"ok\"") { return lines }
                    guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                        object["progress"] as? String == "open_url", let url = object["url"] as? String
                    else { continue }
                    // The user's browser: the provider's form, then the redirect to tokend.
                    let semaphore = DispatchSemaphore(value: 0)
                    Task {
                        if let form = try? await http.send(.form(url, [("sub", "erin")])).get(), let location = form.headers["location"] {
                            _ = await http.send(.get(location))
                        }
                        semaphore.signal()
                    }
                    semaphore.wait()
                }
            }
            let last = try require(lines.last)
            #expect(last.contains("\"ok\":true") && last.contains("\"progress\":\"done\""), "\(lines)")
            #expect(!lines.joined().contains("refresh_token"))
            let token = try await world.tokenctl(["token", "corp"])
            #expect(token.status == 0, "\(token.stderr)")
            let (status, userinfo) = try await mock.userinfoStatus(accessToken: token.stdout.trimmingCharacters(in: .newlines))
            #expect(status == 200 && userinfo.contains("erin"))
            let id = try await world.tokenctl(["token", "corp", "--kind", "id"])
            #expect(id.status == 0 && JWTClaims(token: id.stdout.trimmingCharacters(in: .newlines))?.subject == "erin")
            // The granted scopes are stored with the session.
            #expect(try await world.storedSession("corp")?.scopes == ["openid", "email"])
        }
    }

    /// Logout with no revocation endpoint: the session goes, and tokenctl says nothing was revoked.
    @Test func logoutWithoutARevocationEndpointStillForgets() async throws {
        try await withMock { world, mock in
            try world.writeConfig(Self.account(mock, extra: "client_auth = \"client_secret_post\""))
            try await world.startDaemon()
            let refreshToken = try await mock.refreshToken(for: "bob", clientID: Self.clientID, clientSecret: Self.clientSecret)
            // client_secret_post is refused by the mock (it wants Basic): a configuration error, exit 78.
            let imported = try await world.tokenctl(["import", "corp"], stdin: refreshToken + "\n")
            #expect(imported.status == 78, "\(imported.status) \(imported.stderr)")
            #expect(imported.stderr.contains("invalid_client"))
            let logout = try await world.tokenctl(["logout", "corp"])
            #expect(logout.status == 0, "\(logout.stderr)")
            #expect(logout.stdout == "corp logged out\n")
            #expect(try await world.storedSession("corp") == nil)
        }
    }
}
