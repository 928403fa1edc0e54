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
        try await withWorld(accounts: [], startDaemon: false) { world in
            let mock = try await OIDCProviderMock.start(directory: world.keyring.root)
            try await withTearDown(mock, tearDown: { await $0.stop() }) { mock in try await body(world, mock) }
        }
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

    /// The browser login through the real tokenctl and tokend: tokenctl prints the URL, the
    /// provider's form is driven over HTTP, and the session is then served by tokenctl.
    @Test func browserLoginThroughTheDaemon() async throws {
        try await withMock { world, mock in
            try world.writeConfig(Self.account(mock, extra: "scopes = [\"openid\", \"email\"]"))
            try await world.startDaemon()
            // The real tokenctl, printing the URL (--no-browser) for the user's browser.
            let login = try await Self.tokenctlSigningInAtTheMock(world, mock, ["login", "corp"], user: "erin")
            #expect(login.status == 0, "\(login.output)")
            #expect(!login.output.contains("refresh_token"))
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

    /// The same login with a real headless Chromium as the user's browser: it opens the URL
    /// tokenctl printed, submits the provider's form and lands on tokend's success page.
    @Test func browserLoginThroughTheDaemonWithHeadlessChromium() async throws {
        try await withMock { world, mock in
            try world.writeConfig(Self.account(mock))
            try await world.startDaemon()
            var page = ""
            let login = try await Self.tokenctlSigningIn(world, ["login", "corp"]) { url in
                page = try await HeadlessChromium.signIn(at: url, as: "dave", home: world.keyring.root)
            }
            #expect(login.status == 0, "\(login.output)")
            #expect(page.contains("Signed in") && page.contains("tokend has your session. You can close this tab."), "the browser ended on: \(page)")
            let token = try await world.tokenctl(["token", "corp"])
            #expect(token.status == 0, "\(token.stderr)")
            let (status, userinfo) = try await mock.userinfoStatus(accessToken: token.stdout.trimmingCharacters(in: .newlines))
            #expect(status == 200 && userinfo.contains("dave"))
            #expect(try await world.status("corp").state == "active")
        }
    }

    /// Runs the real `tokenctl` (`arguments` plus `--no-browser`) and plays the user's browser on
    /// the URL it prints: the mock's form signed as `user`, then the redirect to tokend. Returns
    /// tokenctl's exit status and everything it printed. `isSignInURL` picks the line to open.
    static func tokenctlSigningInAtTheMock(_ world: DaemonHarness, _ mock: OIDCProviderMock, _ arguments: [String], user: String) async throws -> (status: Int32, output: String) {
        try await tokenctlSigningIn(world, arguments) { url in
            if let form = try? await mock.send(.form(url, [("sub", user)])).get(), let location = form.headers["location"] {
                _ = await mock.send(.get(location))
            }
        }
    }

    /// Runs the real `tokenctl` (`arguments` plus `--no-browser`), hands the authorization URL it
    /// prints to `browser`, and waits for tokenctl to end. Returns its exit status and output.
    static func tokenctlSigningIn(
        _ world: DaemonHarness, _ arguments: [String], url isSignInURL: @escaping (String) -> Bool = { $0.contains("authorize") },
        browser: (String) async throws -> Void
    ) async throws -> (status: Int32, output: String) {
        let output = world.keyring.root.appendingPathComponent("tokenctl-\(UInt64.random(in: 0...UInt64.max)).out").path
        let pid = try ChildProcess.start(DaemonHarness.binDirectory + "/tokenctl", arguments + ["--no-browser"], environment: world.environment, output: output)
        var printed: String { (try? String(contentsOfFile: output, encoding: .utf8)) ?? "" }
        var url: String? { printed.split(separator: "\n").map(String.init).first { $0.hasPrefix("http") && isSignInURL($0) } }
        do {
            try await poll("tokenctl prints the authorization URL") { url != nil }
        } catch {
            ChildProcess.stop(pid)
            throw error
        }
        do {
            try await browser(try require(url))
        } catch {
            ChildProcess.stop(pid)
            throw error
        }
        var status: Int32?
        try await poll(timeout: 60, "tokenctl finishes") {
            status = ChildProcess.exitStatusIfEnded(pid)
            return status != nil
        }
        return (try require(status), printed)
    }

    /// Firebase's `--google`: the browser login at an OpenID provider standing in for Google
    /// (`google_issuer`), its ID token exchanged at `signInWithIdp`; the session is Firebase's.
    @Test func firebaseGoogleSignInThroughTheDaemon() async throws {
        try await withMock { world, mock in
            try await Self.startWithGoogleStandIn(world, mock)
            let login = try await Self.tokenctlSigningInAtTheMock(world, mock, ["login", "work", "--google"], user: "gina")
            #expect(login.status == 0, "\(login.output)")
            #expect(login.output.contains("google.com"), "signed in with Google: \(login.output)")
            let token = try await world.tokenctl(["token", "work"])
            #expect(token.status == 0, "\(token.stderr)")
            // A Firebase ID token (issued by the fake), not the provider's.
            #expect(JWTClaims(token: token.stdout.trimmingCharacters(in: .newlines))?.issuer?.contains("securetoken") == true)
            let shown = try await world.tokenctl(["account", "show", "work", "--json"])
            #expect(shown.status == 0 && shown.stdout.contains("google.com"), "\(shown.stdout) \(shown.stderr)")
        }
    }

    /// `account upgrade --google`: an anonymous user links Google and keeps its uid.
    @Test func firebaseAnonymousUpgradeWithGoogleKeepsTheUid() async throws {
        try await withMock { world, mock in
            try await Self.startWithGoogleStandIn(world, mock)
            #expect(try await world.tokenctl(["login", "work", "--anonymous"]).status == 0)
            let uid = try #require(JWTClaims(token: try await world.tokenctl(["token", "work"]).stdout.trimmingCharacters(in: .newlines))?.subject)
            let upgrade = try await Self.tokenctlSigningInAtTheMock(world, mock, ["account", "upgrade", "work", "--google"], user: "hugo")
            #expect(upgrade.status == 0, "\(upgrade.output)")
            #expect(upgrade.output.contains("same uid"), "\(upgrade.output)")
            let after = try await world.tokenctl(["token", "work", "--min-valid", "1"])
            let claims = try #require(JWTClaims(token: after.stdout.trimmingCharacters(in: .newlines)))
            #expect(claims.subject == uid, "the same user, now signed in with Google")
            let shown = try await world.tokenctl(["account", "show", "work", "--json"])
            #expect(shown.stdout.contains("google.com"), "\(shown.stdout)")
        }
    }

    /// A Firebase account `work` whose `--google` signs in at the mock in Google's place.
    static func startWithGoogleStandIn(_ world: DaemonHarness, _ mock: OIDCProviderMock) async throws {
        world.fake.update { $0.identityProviders["google.com"]?.issuers.insert(mock.issuer) }
        try world.writeConfig(world.firebaseAccount("work") + """

            google_client_id = "\(clientID)"
            google_client_secret = "\(clientSecret)"
            google_issuer = "\(mock.issuer)"
            """)
        try await world.startDaemon()
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
