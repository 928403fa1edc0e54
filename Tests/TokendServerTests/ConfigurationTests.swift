import Testing
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
        #expect(configuration.accounts["corp"]?.provider == .oidc(issuer: "https://login.example.com", clientID: "cli", clientSecret: nil, scopes: ["openid", "email"]))
    }

    @Test func emulatorComesFromTheEnvironmentUnlessConfigured() throws {
        let text = "[account.w]\nprovider = \"firebase\"\napi_key = \"k\"\n"
        #expect(try parse(text, environment: ["FIREBASE_AUTH_EMULATOR_HOST": "127.0.0.1:9099"]).accounts["w"]?.provider == .firebase(apiKey: "k", emulatorHost: "127.0.0.1:9099"))
        #expect(try parse(text + "emulator = \"127.0.0.1:1\"\n", environment: ["FIREBASE_AUTH_EMULATOR_HOST": "x:1"]).accounts["w"]?.provider == .firebase(apiKey: "k", emulatorHost: "127.0.0.1:1"))
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
}
