import Foundation
import Testing
import TokendFakes
import TokendProtocol
import TokendProviders
import TokendTestSupport

/// Issue 33, item 1: production refuses a Microsoft token a client obtained itself with
/// `INVALID_CREDENTIAL_OR_PROVIDER_ID` (firebase-js-sdk#5802, #8913), so `microsoft.com` signs in
/// through the project's hosted handler only: a `client_id` table for it is refused when the
/// configuration is read, naming its line, `auth_domain`, and the one-tenant alternative.
@Suite(.serialized) struct MicrosoftSignInTests {
    static let clientID = "microsoft-app-of-the-project"

    @Test func aMicrosoftClientTableIsRefusedWhenTheConfigurationIsRead() async throws {
        try await withWorld(accounts: [], startDaemon: false) { world in
            // Lines 1-4: the account; 6: the idp table, 7: its client_id.
            try world.writeConfig(world.firebaseAccount("work") + "\n\n[account.work.idp.\"microsoft.com\"]\nclient_id = \"\(Self.clientID)\"\n")
            try await world.startDaemon()
            let run = try await world.tokenctl(["login", "work", "--idp", "microsoft.com", "--no-browser"])
            #expect(run.status == 78, "\(run.stderr)")
            #expect(run.stderr.contains(world.configPath + ":6"), "names the idp table's line, not the account's: \(run.stderr)")
            for named in ["INVALID_CREDENTIAL_OR_PROVIDER_ID", "auth_domain", #"idp."oidc.ID""#, "https://login.microsoftonline.com/TENANT-ID/v2.0"] {
                #expect(run.stderr.contains(named), "\(named) is not named: \(run.stderr)")
            }
        }
    }

    /// What tokend no longer sends, the fake refuses as production does; from the project's
    /// own handler the same token is taken.
    @Test func theFakeRefusesAClientsOwnMicrosoftTokenAndTakesTheHandlers() async throws {
        try await withWorld(accounts: [], startDaemon: false) { world in
            world.fake.update { $0.identityProviders["microsoft.com"] = FakeFirebase.IdentityProvider(issuers: ["https://login.microsoftonline.com/{tenantid}/v2.0"]) }
            let token = #"{"sub":"ms-1","iss":"https://login.microsoftonline.com/\#(FederatedStandIn.tenant)/v2.0","tid":"\#(FederatedStandIn.tenant)","exp":4102444800}"#
            let body = "id_token=" + (token.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "") + "&providerId=microsoft.com"
            let own = world.fake.signInWithIdp(apiKey: "test-api-key", requestUri: "http://localhost", postBody: body)
            let said = String(decoding: own.body, as: UTF8.self)
            #expect(own.status == 400 && said.contains("INVALID_CREDENTIAL_OR_PROVIDER_ID : Invalid IdP response/credential: http://localhost?id_token="), "\(said)")
            let handler = world.fake.signInWithIdp(apiKey: "test-api-key", requestUri: "https://demo-tokend.firebaseapp.com/__/auth/handler", postBody: body)
            #expect(handler.status == 200, "\(String(decoding: handler.body, as: UTF8.self))")
        }
    }

    /// `tokenctl login work --idp microsoft.com` clicked through tokend's page in a real headless
    /// Chromium, expected to sign in; the login's result, for what each test checks beyond that.
    static func signInOnThePage(_ world: DaemonHarness) async throws -> (status: Int32, output: String) {
        var page = ""
        let login = try await OIDCMockTests.tokenctlSigningIn(world, ["login", "work", "--idp", "microsoft.com"], url: { $0.hasPrefix("http://localhost:") }) { url in
            page = try await HeadlessChromium.clickThroughHostedPage(at: url, home: world.keyring.root)
        }
        #expect(login.status == 0, "\(login.output)")
        #expect(page.hasPrefix("Signed in. tokend has your session."), "the page ended on: \(page)")
        return login
    }

    /// `microsoft.com` with `auth_domain`: tokend's page, a real headless Chromium, and the
    /// stand-in handler, whose `signInWithIdp` the fake takes.
    @Test func microsoftSignsInThroughTheHostedHandler() async throws {
        let issuers: Set<String> = ["https://login.microsoftonline.com/{tenantid}/v2.0"]
        try await SignInWithAppleTests.withHostedHandler("microsoft.com", issuers: issuers, clientID: Self.clientID) { world, standIn in
            standIn.approveNext(as: .init(id: "AAAAms-hosted-1", email: "mia@contoso.example"))
            let login = try await Self.signInOnThePage(world)
            #expect(login.output.contains("work signed in (microsoft.com)"), "\(login.output)")
            let token = try await world.tokenctl(["token", "work"])
            let claims = try #require(FirebaseClaims(token: token.stdout.trimmingCharacters(in: .newlines)))
            #expect(claims.signInProvider == "microsoft.com")
            #expect(world.fake.user(try #require(claims.uid))?.providers == ["microsoft.com"])
            let exchange = try #require(world.fake.requests.last { $0.path.hasSuffix("accounts:signInWithIdp") })
            #expect(exchange.status == 200)
        }
    }

    /// Issue 44, item 2: a Microsoft app of one tenant (Azure's default registration) is refused
    /// at `/common` (AADSTS50194); `custom_parameters = { tenant = … }` reaches the SDK's
    /// `setCustomParameters`, and the sign-in goes through.
    @Test func aSingleTenantMicrosoftAppSignsInWithTheTenantCustomParameter() async throws {
        let issuers: Set<String> = ["https://login.microsoftonline.com/{tenantid}/v2.0"]
        let table = "\ncustom_parameters = { tenant = \"\(FederatedStandIn.tenant)\", prompt = \"select_account\", login_hint = \"mia@contoso.example\" }\n"
        try await SignInWithAppleTests.withHostedHandler("microsoft.com", issuers: issuers, clientID: Self.clientID, table: table) { world, standIn in
            standIn.registerMicrosoftAppInOneTenant(FederatedStandIn.tenant)
            standIn.approveNext(as: .init(id: "AAAAms-tenant-1", email: "mia@contoso.example"))
            _ = try await Self.signInOnThePage(world)
            #expect(standIn.customParametersSeen == [["tenant": FederatedStandIn.tenant, "prompt": "select_account", "login_hint": "mia@contoso.example"]])
            let token = try await world.tokenctl(["token", "work"])
            #expect(token.status == 0, "\(token.stderr)")
        }
    }

    /// Custom parameters are checked when the configuration is read: only known keys, each
    /// where it belongs, of plain characters; the error names the key's line.
    @Test(arguments: [
        (#"custom_parameters = { client_id = "x" }"#, "is not a custom parameter tokend passes"),
        (#"custom_parameters = { tenant = "a&redirect_uri=https://evil.example" }"#, "must be a string of 1 to 256 letters"),
        (#"custom_parameters = { prompt = "always" }"#, "must be one or more of consent, login, none, select_account"),
        (#"custom_parameters = "tenant""#, "must be a table"),
    ])
    func badCustomParametersAreRefusedWhenTheConfigurationIsRead(line: String, says: String) async throws {
        try await withWorld(accounts: [], startDaemon: false) { world in
            // Lines 1-4: the account; 6: the idp table, 7: auth_domain, 8: the parameters.
            try world.writeConfig(world.firebaseAccount("work") + "\n\n[account.work.idp.\"microsoft.com\"]\nauth_domain = \"demo-tokend.firebaseapp.com\"\n\(line)\n")
            try await world.startDaemon()
            let run = try await world.tokenctl(["login", "work", "--idp", "microsoft.com", "--no-browser"])
            #expect(run.status == 78, "\(run.stderr)")
            #expect(run.stderr.contains("custom_parameters") && run.stderr.contains(says), "\(run.stderr)")
        }
    }

    /// `tenant` is Microsoft's: refused for Apple.
    @Test func aTenantParameterIsRefusedForAnotherProvider() async throws {
        try await withWorld(accounts: [], startDaemon: false) { world in
            try world.writeConfig(world.firebaseAccount("work") + "\n\n[account.work.idp.\"apple.com\"]\nauth_domain = \"demo-tokend.firebaseapp.com\"\ncustom_parameters = { tenant = \"contoso.example\" }\n")
            try await world.startDaemon()
            let run = try await world.tokenctl(["login", "work", "--idp", "apple.com", "--no-browser"])
            #expect(run.status == 78, "\(run.stderr)")
            #expect(run.stderr.contains("is Microsoft's, not Apple's"), "\(run.stderr)")
        }
    }
}
