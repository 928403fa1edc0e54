import Foundation
import Testing
import TokendCore
import TokendFakes
import TokendProtocol
import TokendProviders
import TokendTestSupport

/// `tokenctl login ACCOUNT --idp ID` through the real tokend and tokenctl: the sign-in at a
/// stand-in for Microsoft (multi-tenant issuer) or GitHub (OAuth 2.0 only, opaque access token),
/// then the exchange at the fake Firebase's `signInWithIdp`, which accepts each provider id as
/// the Auth Emulator does (and GitHub's token as production does, through the provider's API).
@Suite(.serialized) struct IdentityProviderTests {
    static let clientID = "tokend-idp-client"
    static let clientSecret = "idp-client-secret-canary-4711"
    /// The project's OpenID Connect provider for its Microsoft Entra tenant.
    static let entra = "oidc.entra"

    /// A daemon world with a stand-in of `family` enabled in the project, torn down when `body` ends.
    func withStandIn(_ family: FederatedStandIn.Family, _ body: (DaemonHarness, FederatedStandIn) async throws -> Void) async throws {
        try await withWorld(accounts: [], startDaemon: false) { world in
            let standIn = try await FederatedStandIn.start(family, clientID: Self.clientID, clientSecret: family == .github ? Self.clientSecret : nil)
            try await withTearDown(standIn, tearDown: { await $0.shutdown() }) { standIn in
                world.fake.update { options in
                    switch family {
                    case .microsoft:
                        // One tenant's Microsoft as an Identity Platform OIDC provider: what
                        // production takes in place of microsoft.com tokens (issue 33, item 1).
                        options.identityProviders[Self.entra] = FakeFirebase.IdentityProvider(issuers: [standIn.tenantIssuer], clientIDs: [Self.clientID])
                    case .github:
                        options.identityProviders["github.com"] = FakeFirebase.IdentityProvider(userInfo: { standIn.userInfo(accessToken: $0) })
                    }
                }
                try world.writeConfig(world.firebaseAccount("work") + "\n" + Self.table(family, standIn))
                try await world.startDaemon()
                try await body(world, standIn)
            }
        }
    }

    /// The account's `idp` table for the stand-in: the client, and the endpoints in place of the
    /// real provider's (which tokend knows).
    static func table(_ family: FederatedStandIn.Family, _ standIn: FederatedStandIn) -> String {
        switch family {
        case .microsoft:
            """
            [account.work.idp."\(entra)"]
            client_id = "\(clientID)"
            issuer = "\(standIn.tenantIssuer)"
            """
        case .github:
            """
            [account.work.idp."github.com"]
            client_id = "\(clientID)"
            client_secret = "\(clientSecret)"
            authorization_endpoint = "\(standIn.authorizationEndpoint)"
            token_endpoint = "\(standIn.tokenEndpoint)"
            device_authorization_endpoint = "\(standIn.deviceAuthorizationEndpoint)"
            """
        }
    }

    /// Runs the real tokenctl and plays the browser: the stand-in approves as `user`, and its
    /// redirect is followed to tokend's loopback listener.
    func signIn(_ world: DaemonHarness, _ standIn: FederatedStandIn, _ arguments: [String], as user: FederatedStandIn.User) async throws -> (status: Int32, output: String) {
        standIn.approveNext(as: user)
        let http = HTTPTransport(environment: [:])
        defer { Task { await http.shutdown() } }
        return try await OIDCMockTests.tokenctlSigningIn(world, arguments) { url in
            let approved = try await http.send(.get(url)).get()
            guard approved.status == 302, let location = approved.headers["location"] else { throw HarnessError("the stand-in answered \(approved.status)") }
            _ = try await http.send(.get(location)).get()
        }
    }

    /// The Firebase ID token tokend serves for `work`, as claims.
    func firebaseClaims(_ world: DaemonHarness) async throws -> FirebaseClaims {
        let token = try await world.tokenctl(["token", "work", "--min-valid", "1"])
        #expect(token.status == 0, "\(token.stderr)")
        return try #require(FirebaseClaims(token: token.stdout.trimmingCharacters(in: .newlines)))
    }

    @Test func oneMicrosoftTenantSignsInAsAnOIDCProvider() async throws {
        try await withStandIn(.microsoft) { world, standIn in
            let login = try await signIn(world, standIn, ["login", "work", "--idp", Self.entra], as: .init(id: "AAAAms-sub-1", email: "mia@contoso.example"))
            #expect(login.status == 0, "\(login.output)")
            #expect(login.output.contains("work signed in (\(Self.entra))"), "\(login.output)")
            let claims = try await firebaseClaims(world)
            #expect(claims.signInProvider == Self.entra)
            let shown = try await world.tokenctl(["account", "show", "work"])
            #expect(shown.status == 0 && shown.stdout.contains(Self.entra), "\(shown.stdout) \(shown.stderr)")
            // Discovery was read at the tenant's own endpoint.
            #expect(standIn.requests.contains("GET /\(FederatedStandIn.tenant)/v2.0/.well-known/openid-configuration"))
            #expect(world.fake.user(try #require(claims.uid))?.providers == [Self.entra])
        }
    }

    @Test func githubSignsInWithItsAccessToken() async throws {
        try await withStandIn(.github) { world, standIn in
            let login = try await signIn(world, standIn, ["login", "work", "--idp", "github.com"], as: .init(id: "583231", email: "octo@example.com"))
            #expect(login.status == 0, "\(login.output)")
            #expect(login.output.contains("work signed in (github.com)"), "\(login.output)")
            let claims = try await firebaseClaims(world)
            #expect(claims.signInProvider == "github.com")
            let shown = try await world.tokenctl(["account", "show", "work", "--json"])
            #expect(shown.status == 0 && shown.stdout.contains("github.com"), "\(shown.stdout) \(shown.stderr)")
            // Firebase was given GitHub's access token, not an ID token (GitHub has none).
            let exchange = try #require(world.fake.requests.last { $0.path.hasSuffix("accounts:signInWithIdp") })
            #expect(exchange.status == 200)
            #expect(world.fake.user(try #require(claims.uid))?.providers == ["github.com"])
        }
    }

    /// `--device`: GitHub's device flow, whose "still pending" answers are HTTP 200 with an
    /// `error`; the user enters the printed code at the stand-in's verification page.
    @Test func githubDeviceFlowSignsIn() async throws {
        try await withStandIn(.github) { world, standIn in
            let output = world.keyring.root.appendingPathComponent("device-\(UInt64.random(in: 0...UInt64.max)).out").path
            let pid = try ChildProcess.start(
                DaemonHarness.binDirectory + "/tokenctl", ["login", "work", "--idp", "github.com", "--device"], environment: world.environment, output: output)
            var printed: String { (try? String(contentsOfFile: output, encoding: .utf8)) ?? "" }
            var userCode: String? { printed.split(separator: "\n").first { $0.contains("enter the code: ") }.map { String($0.split(separator: " ").last ?? "") } }
            var status: Int32?
            do {
                try await poll("tokenctl prints the user code") { userCode != nil }
                #expect(printed.contains(standIn.base + "/login/device"), "\(printed)")
                #expect(standIn.enterDeviceCode(try require(userCode), as: .init(id: "4242", email: "dev@example.com")))
                try await poll(timeout: 60, "tokenctl finishes") {
                    status = ChildProcess.exitStatusIfEnded(pid)
                    return status != nil
                }
            } catch {
                ChildProcess.stop(pid)
                throw error
            }
            #expect(status == 0, "\(printed)")
            #expect(try await firebaseClaims(world).signInProvider == "github.com")
            #expect(standIn.requests.filter { $0 == "POST /login/oauth/access_token" }.count >= 1)
        }
    }

    /// An anonymous user links a GitHub account and a Microsoft one can be linked the same way:
    /// the uid stays, the sign-in provider is the new one.
    @Test func anonymousUpgradeWithAnIdentityProviderKeepsTheUid() async throws {
        try await withStandIn(.github) { world, standIn in
            #expect(try await world.tokenctl(["login", "work", "--anonymous"]).status == 0)
            let uid = try await firebaseClaims(world).uid
            let upgrade = try await signIn(world, standIn, ["account", "upgrade", "work", "--idp", "github.com"], as: .init(id: "9001", email: "ana@example.com"))
            #expect(upgrade.status == 0, "\(upgrade.output)")
            #expect(upgrade.output.contains("work upgraded: signed in with github.com, same uid"), "\(upgrade.output)")
            let after = try await firebaseClaims(world)
            #expect(after.uid == uid)
            #expect(after.signInProvider == "github.com")

            // The same GitHub account cannot be linked to a second anonymous user.
            _ = try await world.tokenctl(["logout", "work"])
            #expect(try await world.tokenctl(["login", "work", "--anonymous"]).status == 0)
            let again = try await signIn(world, standIn, ["account", "upgrade", "work", "--idp", "github.com"], as: .init(id: "9001", email: "ana@example.com"))
            #expect(again.status == 77, "\(again.output)")
            #expect(again.output.contains("already belongs to another user") && again.output.contains("--idp github.com"), "\(again.output)")

            // Another GitHub account whose address a password user of the project has: the link
            // is refused (one account per email), and the message says whom to sign in as.
            _ = world.fake.createUser(email: "taken@example.com", password: "a-password-1")
            let taken = try await signIn(world, standIn, ["account", "upgrade", "work", "--idp", "github.com"], as: .init(id: "9002", email: "taken@example.com"))
            #expect(taken.status == 77, "\(taken.output)")
            #expect(taken.output.contains("EMAIL_EXISTS") && taken.output.contains("already has the email of this GitHub account"), "\(taken.output)")
        }
    }

    /// A Microsoft tenant's OIDC provider links the same way: the anonymous user keeps its uid.
    @Test func anonymousUpgradeWithAMicrosoftTenantKeepsTheUid() async throws {
        try await withStandIn(.microsoft) { world, standIn in
            #expect(try await world.tokenctl(["login", "work", "--anonymous"]).status == 0)
            let uid = try await firebaseClaims(world).uid
            let upgrade = try await signIn(world, standIn, ["account", "upgrade", "work", "--idp", Self.entra], as: .init(id: "AAAAms-2", email: "max@contoso.example"))
            #expect(upgrade.status == 0, "\(upgrade.output)")
            let after = try await firebaseClaims(world)
            #expect(after.uid == uid && after.signInProvider == Self.entra)
        }
    }

    /// What goes wrong says what to do: a provider the account has no table for, one the
    /// project has not enabled, and one tokend refuses outright.
    @Test func errorsNameTheTableTheConsoleAndTheReason() async throws {
        try await withStandIn(.github) { world, standIn in
            let missing = try await world.tokenctl(["login", "work", "--idp", "microsoft.com", "--no-browser"])
            #expect(missing.status == 78, "\(missing.stderr)")
            // The account's own name, never a literal NAME (issue 33, item 8).
            #expect(missing.stderr.contains(#"[account.work.idp."microsoft.com"]"#) && !missing.stderr.contains("NAME"), "\(missing.stderr)")
            #expect(missing.stderr.contains("auth_domain"), "Microsoft's table is named with the hosted handler: \(missing.stderr)")
            let bad = try await world.tokenctl(["login", "work", "--idp", "Not A Provider", "--no-browser"])
            #expect(bad.status == 64, "\(bad.stderr)")
            let apple = try await world.tokenctl(["login", "work", "--idp", "apple.com", "--no-browser"])
            #expect(apple.status == 78 && apple.stderr.contains("auth_domain") && apple.stderr.contains("Sign in with Apple"), "\(apple.stderr)")

            world.fake.update { $0.identityProviders["github.com"] = nil }
            let off = try await signIn(world, standIn, ["login", "work", "--idp", "github.com"], as: .init(id: "1", email: "x@example.com"))
            #expect(off.status == 78, "\(off.output)")
            #expect(off.output.contains("GitHub sign-in is disabled for the project"), "\(off.output)")
        }
    }

    /// Against the Auth Emulator, which answers GitHub's access token 501: the emulator cannot
    /// do it (78), not "try later" (issue 33, item 8).
    @Test func theEmulatorsRefusalOfGitHubIsNamedNotRetried() async throws {
        try await withStandIn(.github) { world, standIn in
            world.fake.update { $0.answersAsAuthEmulator = true }
            let login = try await signIn(world, standIn, ["login", "work", "--idp", "github.com"], as: .init(id: "77", email: "emu@example.com"))
            #expect(login.status == 78, "\(login.output)")
            #expect(login.output.contains("Auth Emulator cannot do this") && login.output.contains("github.com"), "\(login.output)")
            #expect(!login.output.contains("try again"), "\(login.output)")
        }
    }

    /// The provider's code, access and ID tokens, the client secret and the Firebase tokens
    /// never reach the daemon's log, an event, or any process's argv or environment.
    @Test func noProviderSecretInLogsArgvOrEvents() async throws {
        for family in [FederatedStandIn.Family.microsoft, .github] {
            try await withStandIn(family) { world, standIn in
                let watcher = try EventRecorder(socketPath: world.socketPath, profile: true)
                let id = family == .github ? "github.com" : Self.entra
                var commandLines = ""
                let login = try await OIDCMockTests.tokenctlSigningIn(world, ["login", "work", "--idp", id]) { url in
                    standIn.approveNext(as: .init(id: "canary-user", email: "canary@example.com"))
                    let http = HTTPTransport(environment: [:])
                    let approved = try await http.send(.get(url)).get()
                    commandLines = FirebaseRaceTests.everyProcessText()
                    if let location = approved.headers["location"] { _ = try await http.send(.get(location)).get() }
                    await http.shutdown()
                }
                #expect(login.status == 0, "\(login.output)")
                let secrets = standIn.issuedSecrets + world.fake.requests.compactMap(\.issuedIDToken) + [Self.clientSecret]
                #expect(secrets.count >= 3)
                // The event reaches the watcher on its own connection, after the login's answer.
                _ = try await watcher.first("signed_in", where: { $0.event == .signedIn })
                let events = watcher.lines.withLock { $0 }.joined(separator: "\n")
                let files = FirebaseRaceTests.filesText(under: world.keyring.root, skipping: ["keyrings", "config.toml"])
                for secret in secrets {
                    #expect(!world.daemonLog.contains(secret), "in the daemon's log")
                    #expect(!events.contains(secret), "in an event")
                    #expect(!commandLines.contains(secret), "in a process's argv or environment")
                    #expect(!login.output.contains(secret), "in tokenctl's output")
                    #expect(!files.contains(secret) || secret == Self.clientSecret, "in a file outside the keyring")
                }
            }
        }
    }
}

/// Sign in with Apple through the project's Firebase-hosted handler: tokend serves its page on
/// localhost, a real headless Chromium clicks through it, and stand-ins play Firebase's
/// JavaScript SDK, the handler and Apple (`FirebaseHostedStandIn`); the handler's
/// `signInWithIdp` is the fake Firebase's own.
@Suite(.serialized) struct SignInWithAppleTests {
    static let servicesID = "com.example.tokend.signin"

    func withApple(_ body: (DaemonHarness, FirebaseHostedStandIn) async throws -> Void) async throws {
        try await Self.withHostedHandler("apple.com", issuers: [FirebaseHostedStandIn.appleIssuer], clientID: Self.servicesID, body)
    }

    /// A daemon world whose account signs in with `id` through the stand-in's hosted handler,
    /// the project trusting `issuers` for tokens issued to `clientID`.
    static func withHostedHandler(
        _ id: String, issuers: Set<String>, clientID: String, table extra: String = "", _ body: (DaemonHarness, FirebaseHostedStandIn) async throws -> Void
    ) async throws {
        try await withWorld(accounts: [], startDaemon: false) { world in
            let fake = world.fake
            let standIn = FirebaseHostedStandIn(servicesID: clientID) { apiKey, requestUri, postBody in
                fake.signInWithIdp(apiKey: apiKey, requestUri: requestUri, postBody: postBody)
            }
            try await standIn.start()
            try await withTearDown(standIn, tearDown: { await $0.shutdown() }) { standIn in
                world.fake.update { $0.identityProviders[id] = FakeFirebase.IdentityProvider(issuers: issuers, clientIDs: [clientID]) }
                try world.writeConfig(world.firebaseAccount("work") + """

                    [account.work.idp."\(id)"]
                    auth_domain = "\(standIn.authDomain)"
                    firebase_sdk = "\(standIn.sdk)"
                    """ + extra)
                try await world.startDaemon()
                try await body(world, standIn)
            }
        }
    }

    @Test func appleSignsInThroughTheHostedHandler() async throws {
        try await withApple { world, standIn in
            standIn.approveNext(as: .init(id: "001234.5f6e7d8c9b0a.1234", email: "q7x2k@privaterelay.appleid.com"))
            let watcher = try EventRecorder(socketPath: world.socketPath, profile: true)
            var page = ""
            let login = try await OIDCMockTests.tokenctlSigningIn(world, ["login", "work", "--idp", "apple.com"], url: { $0.hasPrefix("http://localhost:") }) { url in
                try Self.rebindingPageGetsNothing(at: try require(URLComponents(string: url)?.port))
                page = try await HeadlessChromium.clickThroughHostedPage(at: url, home: world.keyring.root)
            }
            let commandLines = FirebaseRaceTests.everyProcessText()
            #expect(login.status == 0, "\(login.output)")
            #expect(page.hasPrefix("Signed in. tokend has your session."), "the page ended on: \(page)")
            #expect(login.output.contains("work signed in (apple.com)"), "\(login.output)")
            let token = try await world.tokenctl(["token", "work"])
            let claims = try #require(FirebaseClaims(token: token.stdout.trimmingCharacters(in: .newlines)))
            #expect(claims.signInProvider == "apple.com")
            #expect(world.fake.user(try #require(claims.uid))?.providers == ["apple.com"])
            let shown = try await world.tokenctl(["account", "show", "work"])
            #expect(shown.status == 0 && shown.stdout.contains("apple.com"), "\(shown.stdout) \(shown.stderr)")
            // The handler went to Apple with its own return URL and the hashed nonce, and Apple
            // answered with a form post to it.
            #expect(standIn.requests.contains("GET /auth/authorize") && standIn.requests.contains("POST /__/auth/handler"), "\(standIn.requests)")

            // Apple's code and ID token and the session's refresh token stay out of the log and events.
            let secrets = standIn.issuedSecrets
            #expect(secrets.count >= 3)
            _ = try await watcher.first("signed_in", where: { $0.event == .signedIn })
            let events = watcher.lines.withLock { $0 }.joined(separator: "\n")
            for secret in secrets {
                #expect(!world.daemonLog.contains(secret), "in the daemon's log")
                #expect(!events.contains(secret), "in an event")
                #expect(!login.output.contains(secret), "in tokenctl's output")
                #expect(!commandLines.contains(secret), "in a process's argv or environment")
            }
        }
    }

    /// A page of a site whose name resolves to 127.0.0.1 (DNS rebinding) is the listener's
    /// origin to the browser, but its requests name the site in `Host`: it gets neither the page
    /// (and its `state`) nor a say in the sign-in, and `/callback` is not the hosted listener's,
    /// even with the state, so the sign-in goes on (before: the page was served, and
    /// `/callback?state=…&error=access_denied` ended the login with 77).
    static func rebindingPageGetsNothing(at port: Int) throws {
        let rebound = "Host: rebind.example:\(port)\r\n"
        let page = try LoopbackSocket.exchange(port: port, "GET / HTTP/1.1\r\n\(rebound)\r\n")
        #expect(page.hasPrefix("HTTP/1.1 421") && !page.contains("settings"), "\(page)")
        // The state, as the user's own browser would read it from the page.
        let own = try LoopbackSocket.exchange(port: port, "GET / HTTP/1.1\r\nHost: localhost:\(port)\r\n\r\n")
        let state = try require(own.firstMatch(of: /"state": "([^"]+)"/).map { String($0.1) }, "no state in the page: \(own)")
        let callback = "GET /callback?state=\(state)&error=access_denied HTTP/1.1\r\n"
        #expect(try LoopbackSocket.exchange(port: port, callback + rebound + "\r\n").hasPrefix("HTTP/1.1 421"))
        #expect(try LoopbackSocket.exchange(port: port, callback + "Host: localhost:\(port)\r\n\r\n").hasPrefix("HTTP/1.1 404"))
        let body = #"{"state":"\#(state)","error":"auth/popup-closed-by-user"}"#
        let post = "POST /session HTTP/1.1\r\n\(rebound)Origin: http://localhost:\(port)\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
        #expect(try LoopbackSocket.exchange(port: port, post).hasPrefix("HTTP/1.1 421"))
    }

    /// What cannot be done says so: linking Apple to an anonymous user through the hosted page,
    /// and a post that is not the page's own.
    @Test func anUpgradeAndAForeignPostAreRefused() async throws {
        try await withApple { world, _ in
            #expect(try await world.tokenctl(["login", "work", "--anonymous"]).status == 0)
            let upgrade = try await world.tokenctl(["account", "upgrade", "work", "--idp", "apple.com", "--no-browser"])
            #expect(upgrade.status == 64, "\(upgrade.stderr)")
            #expect(upgrade.stderr.contains("cannot be linked"), "\(upgrade.stderr)")

            // A post to the page's listener from elsewhere (no Origin of its own) is refused,
            // and the sign-in keeps waiting for the page's.
            let forged = try await OIDCMockTests.tokenctlSigningIn(world, ["login", "work", "--idp", "apple.com", "--timeout", "5"], url: { $0.hasPrefix("http://localhost:") }) { url in
                let port = try #require(URLComponents(string: url)?.port)
                let http = HTTPTransport(environment: [:])
                let answer = try await http.send(.json("http://127.0.0.1:\(port)/session", Array(#"{"state":"guess","refresh_token":"forged-canary"}"#.utf8))).get()
                await http.shutdown()
                #expect(answer.status == 403)
            }
            #expect(forged.status == 75, "timed out, not signed in with the forged session: \(forged.output)")
            #expect(!world.daemonLog.contains("forged-canary"))
        }
    }
}
