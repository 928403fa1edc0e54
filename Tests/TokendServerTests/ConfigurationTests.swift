import Testing
import TokendProviders
@testable import TokendServer

@Suite struct ConfigurationTests {
    func parse(_ text: String, environment: [String: String] = [:]) throws(ConfigurationError) -> Configuration {
        try Configuration.parse(text, path: "/c.toml", environment: environment)
    }

    @Test func firebaseAndOIDCAccounts() throws {
        let configuration = try parse("""
            [account.work]
            provider = "firebase"
            api_key = "AIza"
            refresh_before = "2m"

            [account.corp]
            provider = "oidc"
            issuer = "https://login.example.com"
            client_id = "cli"
            scopes = ["openid", "email"]
            """)
        #expect(configuration.accounts["work"]?.provider == .firebase(apiKey: "AIza", emulatorHost: nil))
        #expect(configuration.accounts["work"]?.refreshBefore == 120)
        #expect(configuration.accounts["corp"]?.provider == .oidc(OIDCProvider.Settings(issuer: "https://login.example.com", clientID: "cli", scopes: ["openid", "email"])))
        #expect(configuration.accounts["corp"]?.defaultTokenKind == .access)
    }

    /// `[account.NAME.idp."ID"]` tables: known providers need only a client, defaults filled
    /// in; `google_client_id` is the short form of the Google one.
    @Test func identityProviderTables() throws {
        let configuration = try parse("""
            [account.work]
            provider = "firebase"
            api_key = "AIza"
            google_client_id = "g.apps.googleusercontent.com"

            [account.work.idp."github.com"]
            client_id = "gh-client"
            client_secret = "gh-secret"

            [account.work.idp."oidc.corp"]
            client_id = "corp-client"
            issuer = "https://sso.corp.example"
            scopes = ["openid", "email"]
            """)
        let settings = try #require(configuration.accounts["work"]?.provider.base as? FirebaseProvider.Settings)
        #expect(settings.identityProviders.keys.sorted() == ["github.com", "google.com", "oidc.corp"])
        let corp = try #require(settings.identityProviders["oidc.corp"])
        #expect(corp.credential == .idToken)
        let github = try #require(settings.identityProviders["github.com"])
        #expect(github.credential == .accessToken && github.oauth?.clientAuthentication == .post)
        #expect(github.oauth?.endpoints.authorization == "https://github.com/login/oauth/authorize")
        #expect(github.oauth?.endpoints.deviceAuthorization == "https://github.com/login/device/code")
        #expect(settings.identityProviders["google.com"]?.oauth?.issuer == "https://accounts.google.com")
        #expect(settings.identityProviders["oidc.corp"]?.oauth?.scopes == ["openid", "email"])
    }

    /// `auth_domain` makes a table a sign-in through the project's hosted handler (Apple).
    @Test func aHostedIdentityProviderTable() throws {
        let configuration = try parse("""
            [account.work]
            provider = "firebase"
            api_key = "AIza"

            [account.work.idp."apple.com"]
            auth_domain = "my-project.firebaseapp.com"

            [account.work.idp."saml.corp"]
            auth_domain = "login.corp.example"
            scopes = []
            """)
        let settings = try #require(configuration.accounts["work"]?.provider.base as? FirebaseProvider.Settings)
        #expect(settings.identityProviders["apple.com"]?.signIn == .hosted(HostedSignIn(authDomain: "my-project.firebaseapp.com", scopes: ["email", "name"])))
        #expect(settings.identityProviders["saml.corp"]?.signIn == .hosted(HostedSignIn(authDomain: "login.corp.example", scopes: [])))
    }

    @Test(arguments: [
        ("[account.work.idp.\"oidc.corp\"]\nclient_id = \"c\"\n", "issuer"),
        ("[account.work.idp.\"apple.com\"]\nclient_id = \"c\"\n", "Sign in with Apple"),
        ("[account.work.idp.\"twitter.com\"]\nclient_id = \"c\"\n", "OAuth 1.0a"),
        ("[account.work.idp.\"Microsoft.com\"]\nclient_id = \"c\"\n", "provider id"),
        ("[account.work.idp.\"microsoft.com\"]\nclient_id = \"c\"\n", "INVALID_CREDENTIAL_OR_PROVIDER_ID"),
        ("[account.work.idp.\"oidc.entra\"]\nclient = \"c\"\n", "unknown key"),
        ("[account.work.idp.\"oidc.entra\"]\nclient_id = \"c\"\nissuer = \"https://login.microsoftonline.com/t/v2.0\"\nscopes = [\"email\"]\n", "openid"),
        ("[account.work.idp.\"github.com\"]\nclient_id = \"c\"\ncredential = \"code\"\n", "credential"),
        ("[account.work.idp.\"oidc.entra\"]\nclient_id = \"c\"\nissuer = \"http://idp.example.com\"\n", "https"),
        ("[account.work.idp.\"google.com\"]\nclient_id = \"c\"\n[account.work.x]\n", "unknown key"),
        ("[account.work.idp.\"apple.com\"]\nauth_domain = \"p.firebaseapp.com\"\nclient_id = \"c\"\n", "does not go with auth_domain"),
        ("[account.work.idp.\"apple.com\"]\nauth_domain = \"https://p.firebaseapp.com\"\n", "no scheme"),
        ("[account.work.idp.\"apple.com\"]\nauth_domain = \"p.firebaseapp.com\"\nfirebase_sdk = \"http://cdn.example.com/x\"\n", "https"),
    ])
    func identityProviderMistakesNameTheirTable(_ table: String, _ said: String) {
        let text = "[account.work]\nprovider = \"firebase\"\napi_key = \"k\"\n" + table
        #expect(throws: ConfigurationError.self) { try parse(text) }
        do {
            _ = try parse(text)
        } catch {
            #expect(error.description.contains(said), "\(error.description)")
        }
        // A key below the account's table is named with its own line (issue 33, item 8).
        let scopes = "[account.work]\nprovider = \"firebase\"\napi_key = \"k\"\n\n[account.work.idp.\"oidc.corp\"]\nclient_id = \"c\"\nissuer = \"https://sso.example\"\nscopes = [\"email\"]\n"
        #expect(throws: ConfigurationError.self) { try parse(scopes) }
        do { _ = try parse(scopes) } catch { #expect(error.line == 8, "\(error.description)") }
        let both = "[account.work]\nprovider = \"firebase\"\napi_key = \"k\"\ngoogle_client_id = \"g\"\n[account.work.idp.\"google.com\"]\nclient_id = \"c\"\n"
        #expect(throws: ConfigurationError.self) { try parse(both) }
    }

    @Test func oidcOptions() throws {
        let configuration = try parse("""
            [account.corp]
            provider = "oidc"
            issuer = "http://127.0.0.1:8080/realms/x"
            client_id = "cli"
            client_secret = "s"
            client_auth = "client_secret_post"
            kind = "id"
            token_endpoint = "http://127.0.0.1:8080/token"
            revocation_endpoint = "https://example.com/revoke"
            """)
        let expected = OIDCProvider.Settings(
            issuer: "http://127.0.0.1:8080/realms/x", clientID: "cli", clientSecret: "s", clientAuthentication: .post, tokenKind: .id,
            endpoints: .init(token: "http://127.0.0.1:8080/token", revocation: "https://example.com/revoke"))
        #expect(configuration.accounts["corp"]?.provider == .oidc(expected))
        #expect(configuration.accounts["corp"]?.defaultTokenKind == .id)
        // A secret alone means HTTP Basic; none means a public client.
        #expect(OIDCProvider.Settings(issuer: "https://a", clientID: "c", clientSecret: "s").clientAuthentication == .basic)
        #expect(OIDCProvider.Settings(issuer: "https://a", clientID: "c").clientAuthentication == .none)
    }

    @Test(arguments: [
        ("issuer = \"http://login.example.com\"", "account.corp.issuer"),
        ("token_endpoint = \"http://example.com/token\"", "account.corp.token_endpoint"),
        ("client_auth = \"client_secret_jwt\"", "account.corp.client_auth"),
        ("kind = \"refresh\"", "account.corp.kind"),
        ("client_auth = \"client_secret_basic\"\nclient_secret_x = 1", "account.corp.client_secret_x"),
    ])
    func oidcMistakesNameTheirKey(line: String, key: String) {
        var text = "[account.corp]\nprovider = \"oidc\"\nclient_id = \"c\"\n"
        if !line.hasPrefix("issuer") { text += "issuer = \"https://login.example.com\"\n" }
        #expect {
            try parse(text + line + "\n")
        } throws: { error in
            (error as? ConfigurationError)?.key == key
        }
    }

    @Test func emulatorComesFromTheEnvironmentUnlessConfigured() throws {
        let text = "[account.w]\nprovider = \"firebase\"\napi_key = \"k\"\n"
        #expect(try parse(text, environment: ["FIREBASE_AUTH_EMULATOR_HOST": "127.0.0.1:9099"]).accounts["w"]?.provider == .firebase(apiKey: "k", emulatorHost: "127.0.0.1:9099"))
        #expect(try parse(text + "emulator = \"127.0.0.1:1\"\n", environment: ["FIREBASE_AUTH_EMULATOR_HOST": "x:1"]).accounts["w"]?.provider == .firebase(apiKey: "k", emulatorHost: "127.0.0.1:1"))
    }

    /// `emulator` is exactly host[:port]: before, `127.1:1/@127.0.0.1:9099` passed the loopback
    /// check (it read the part after the last `@`) while the raw value went into the URL.
    @Test(arguments: ["127.1:1/@127.0.0.1:9099", "127.0.0.1:9099/x", "user@127.0.0.1:9099", "http://127.0.0.1:9099", "127.0.0.1:0",
                      "127.0.0.1:65536", "127.0.0.1:", "127.0.0.1 :9099", "evil.example#@127.0.0.1", "[::1"])
    func anEmulatorThatIsNotExactlyHostAndPortIsRefused(_ value: String) {
        let text = "[account.w]\nprovider = \"firebase\"\napi_key = \"k\"\nemulator = \"\(value)\"\n"
        #expect {
            try parse(text)
        } throws: { error in
            let error = error as? ConfigurationError
            return error?.key == "account.w.emulator" && error?.description.contains("HOST:PORT") == true
        }
        #expect(throws: ConfigurationError.self, "from the environment too") {
            try parse("[account.w]\nprovider = \"firebase\"\napi_key = \"k\"\n", environment: ["FIREBASE_AUTH_EMULATOR_HOST": value])
        }
    }

    @Test(arguments: ["127.0.0.1", "127.0.0.1:9099", "localhost:1", "[::1]:9099"])
    func aLoopbackEmulatorIsAccepted(_ value: String) throws {
        let text = "[account.w]\nprovider = \"firebase\"\napi_key = \"k\"\nemulator = \"\(value)\"\n"
        #expect(try parse(text).accounts["w"]?.provider == .firebase(apiKey: "k", emulatorHost: value))
    }

    /// An http:// issuer is checked on the host the HTTP client connects to, which URL parsing
    /// decides: user info before the host does not make it loopback.
    @Test func aPlainHTTPIssuerIsCheckedOnTheHostConnectedTo() {
        #expect(throws: ConfigurationError.self) {
            try parse("[account.x]\nprovider=\"oidc\"\nissuer=\"http://127.0.0.1:1@evil.example/\"\nclient_id=\"c\"\n")
        }
    }

    @Test func errorsNameFileLineAndKey() {
        #expect {
            try parse("[account.work]\nprovider = \"firebase\"\n\napi_key = 42\n")
        } throws: { error in
            let error = error as? ConfigurationError
            return error?.line == 4 && error?.key == "account.work.api_key" && error?.path == "/c.toml"
        }
        #expect {
            try parse("[account.work]\nprovider = \"firebase\"\napi_kee = \"x\"\napi_key = \"y\"\n")
        } throws: { error in
            let error = error as? ConfigurationError
            return error?.line == 3 && error?.key == "account.work.api_kee"
        }
        #expect {
            try parse("[account.work]\nprovider = \"firebase\"\n")
        } throws: { error in
            (error as? ConfigurationError)?.description == "/c.toml:1: account.work.api_key: is required"
        }
    }

    @Test func syntaxErrorsCarryTheParsersLine() {
        #expect {
            try parse("[account.work]\nprovider = \n")
        } throws: { error in
            (error as? ConfigurationError)?.line == 2
        }
    }

    @Test(arguments: ["[account.\"a b\"]\nprovider=\"firebase\"\napi_key=\"k\"\n", "[account.x]\nprovider=\"saml\"\n", "top = 1\n",
                      "[account.x]\nprovider=\"oidc\"\nissuer=\"http://evil.example\"\nclient_id=\"c\"\n"])
    func invalidConfigurationsAreRefused(text: String) {
        #expect(throws: ConfigurationError.self) { try parse(text) }
    }

    @Test func durations() {
        #expect(DurationText.seconds("90") == 90)
        #expect(DurationText.seconds("5m") == 300)
        #expect(DurationText.seconds("1h30m") == 5400)
        #expect(DurationText.seconds("soon") == nil)
        #expect(DurationText.seconds("5x") == nil)
    }

    @Test func registryKeys() throws {
        let configuration = try parse("""
            [account.work]
            provider = "firebase"
            api_key = "k"
            registry_hosts = ["registry.example.com", "127.0.0.1:5000"]
            registry_username = "me"
            """)
        #expect(configuration.accounts["work"]?.registryHosts == ["registry.example.com", "127.0.0.1:5000"])
        #expect(configuration.accounts["work"]?.registryUsername == "me")
    }

    @Test(arguments: [
        ("registry_hosts = \"registry.example.com\"", "account.work.registry_hosts"),
        ("registry_hosts = [\"user@registry.example.com\"]", "account.work.registry_hosts"),
        ("registry_username = \"<token>\"", "account.work.registry_username"),
        ("registry_username = \"\"", "account.work.registry_username"),
    ])
    func badRegistryKeysAreLocatedErrors(line: String, key: String) {
        #expect {
            _ = try parse("[account.work]\nprovider = \"firebase\"\napi_key = \"k\"\n\(line)\n")
        } throws: { error in
            (error as? ConfigurationError)?.key == key && (error as? ConfigurationError)?.line == 4
        }
    }
}
