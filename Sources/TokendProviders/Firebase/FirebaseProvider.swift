import TokendCore

extension ProviderKind {
    public static let firebase = ProviderKind(rawValue: "firebase")
}

/// Firebase Authentication's Secure Token API: production over HTTPS, or the Auth emulator
/// convention (plain HTTP, production host as the first path segment).
public struct FirebaseProvider: TokenProvider {
    public static let productionHost = "securetoken.googleapis.com"
    /// The variable the Firebase SDKs and CLI use to point at an emulator.
    public static let emulatorVariable = "FIREBASE_AUTH_EMULATOR_HOST"

    /// An account's `provider = "firebase"` table.
    public struct Settings: ProviderSettings, Equatable {
        public var apiKey: String
        /// `emulator` from the config, else `FIREBASE_AUTH_EMULATOR_HOST` at load time, else nil.
        public var emulatorHost: String?
        /// The identity providers `tokenctl login --idp ID` signs in with, by Firebase's provider
        /// id (`[account.NAME.idp."ID"]`; Google also from `google_client_id`). An installed-app
        /// client's secret identifies the program, not the user: Google says it is not confidential.
        public var identityProviders: [String: IdentityProvider]
        /// `tenant_id`: the Identity Platform tenant the account's users belong to.
        public var tenantID: String?

        public init(apiKey: String, emulatorHost: String?, identityProviders: [String: IdentityProvider] = [:], tenantID: String? = nil) {
            self.apiKey = apiKey
            self.emulatorHost = emulatorHost
            self.identityProviders = identityProviders
            self.tenantID = tenantID
        }

        public var descriptor: ProviderDescriptor { FirebaseProvider.descriptor }
        public var description: String { "firebase(emulator: \(emulatorHost ?? "none"))" }
        public var endpoint: String {
            // A tenant's session is another tenant's stranger: the tenant is part of the binding.
            "firebase \(apiKey) \(emulatorHost.map { "http://\($0)" } ?? "https://\(FirebaseProvider.productionHost)")" + (tenantID.map { " tenant \($0)" } ?? "")
        }

        public func makeProvider(transport: HTTPTransport) -> any TokenProvider {
            var firebase = FirebaseProvider(apiKey: apiKey, emulatorHost: emulatorHost, transport: transport)
            firebase.tenantID = tenantID
            firebase.identitySignIns = identityProviders.mapValues { identityProvider in
                switch identityProvider.signIn {
                case .oauth(let settings, let credential): .oauth(OIDCProvider(settings: settings, transport: transport), credential)
                case .hosted(let hosted): .hosted(hosted)
                }
            }
            return firebase
        }
    }

    public static let descriptor = ProviderDescriptor(
        kind: .firebase, keys: ["api_key", "emulator", "google_client_id", "google_client_secret", "google_issuer", "idp", "tenant_id"], defaultTokenKind: .id,
        capabilities: [], loginMethods: [.email, .anonymous, .customToken, .idp, .secondFactor],
        parse: { values, environment throws(ProviderConfigError) in
            let reader = ProviderConfigReader(values)
            let apiKey = try reader.string("api_key", required: true) ?? ""
            let configured = try reader.string("emulator")
            let emulator = configured ?? environment[emulatorVariable].flatMap { $0.isEmpty ? nil : $0 }
            let source = configured == nil ? "\(emulatorVariable) (\(emulator ?? "")) in tokend's environment" : "an emulator on \(emulator ?? "")"
            // Exactly host[:port]: anything else could put the refresh token elsewhere than the
            // host checked below (`127.1:1/@127.0.0.1:9099`).
            if let emulator, PlainHTTP.hostAndPort(emulator) == nil {
                throw ProviderConfigError(
                    key: configured == nil ? nil : "emulator",
                    "\(configured == nil ? emulatorVariable + " in tokend's environment" : "emulator") must be exactly HOST or HOST:PORT (such as 127.0.0.1:9099), not \"\(emulator)\"")
            }
            // The emulator is spoken to over plain HTTP: refresh tokens must not leave the machine.
            if let emulator, !reader.allowsPlainHTTP, let parsed = PlainHTTP.hostAndPort(emulator), !PlainHTTP.isLoopback(parsed.host) {
                throw ProviderConfigError(
                    key: nil, "\(source) would get refresh tokens over plain HTTP off this machine; use a loopback emulator, or set \(PlainHTTP.optInKey) = true")
            }
            var identityProviders: [String: IdentityProvider] = [:]
            for (id, table) in try reader.tables("idp") {
                identityProviders[id] = try IdentityProvider.parse(id: id, table, allowPlainHTTP: reader.allowsPlainHTTP)
            }
            // The older spelling of `[account.NAME.idp."google.com"]`; `google_issuer` points
            // --google at another OpenID provider whose ID tokens the project accepts as Google's.
            if let clientID = try reader.string("google_client_id") {
                guard identityProviders["google.com"] == nil else {
                    throw ProviderConfigError(key: "google_client_id", "and the idp.\"google.com\" table both configure Google; keep one")
                }
                var table: [String: ProviderConfigValue] = ["client_id": .string(clientID)]
                table["client_secret"] = try reader.string("google_client_secret").map(ProviderConfigValue.string)
                table["issuer"] = try reader.url("google_issuer").map(ProviderConfigValue.string)
                identityProviders["google.com"] = try IdentityProvider.parse(id: "google.com", table, allowPlainHTTP: reader.allowsPlainHTTP)
            } else {
                for key in ["google_client_secret", "google_issuer"] where try reader.string(key) != nil {
                    throw ProviderConfigError(key: key, "goes with google_client_id")
                }
            }
            let tenantID = try reader.string("tenant_id")
            // Identity Platform tenant ids: the display name's letters, digits and hyphens and a
            // suffix, at most 63 characters as a DNS label (Identity Platform, "Tenants").
            if let tenantID, tenantID.isEmpty || tenantID.count > 63 || !tenantID.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }) {
                throw ProviderConfigError(key: "tenant_id", "must be the tenant's id as the console shows it (letters, digits and hyphens, such as acme-x1y2z)")
            }
            return Settings(apiKey: apiKey, emulatorHost: emulator, identityProviders: identityProviders, tenantID: tenantID)
        },
        classify: { answer in RefreshClassifier.firebase(status: answer.status, body: answer.body, retryAfter: answer.retryAfter) })

    public let kind = ProviderKind.firebase
    let apiKey: String
    let emulatorHost: String?
    let transport: HTTPTransport
    /// The identity providers `login --idp` signs in at before exchanging what they returned
    /// at `signInWithIdp`, by provider id.
    public var identitySignIns: [String: IdentitySignIn] = [:]
    /// The Identity Platform tenant every Identity Toolkit call names, and every ID token must carry.
    public var tenantID: String?
    /// Sign-ins and enrollments waiting for a second factor's code (one store per account,
    /// since each account has its own provider).
    let secondFactors = SecondFactorHandles()

    /// One identity provider's sign-in: its OAuth flow and which of its tokens Firebase is
    /// given, or the project's hosted handler.
    public enum IdentitySignIn: Sendable {
        case oauth(any TokenProvider, IdentityProvider.Credential)
        case hosted(HostedSignIn)
    }

    public init(apiKey: String, emulatorHost: String?, transport: HTTPTransport) {
        self.apiKey = apiKey
        self.emulatorHost = emulatorHost
        self.transport = transport
    }

    /// The token endpoint.
    var tokenURL: String { endpoint(host: Self.productionHost, path: "/v1/token") }

    /// A Google API endpoint of the project: production over HTTPS, or the emulator with the
    /// production host as the first path segment. The API key sits in the query, as Google
    /// requires; it is a public project identifier, but it still never goes into a log line.
    func endpoint(host: String, path: String) -> String {
        var key: [UInt8] = []
        FormEncoding.escape(apiKey, into: &key)
        let query = path + "?key=" + String(decoding: key, as: UTF8.self)
        if let emulatorHost {
            // Settings were checked when read; one built otherwise never falls back to production.
            guard let parsed = PlainHTTP.hostAndPort(emulatorHost) else { return "http://emulator-host-is-invalid.invalid/" }
            // The Firebase CLI's default port when the setting names none.
            let authority = (emulatorHost.hasPrefix("[") ? "[\(parsed.host)]" : String(parsed.host)) + ":\(parsed.port ?? 9099)"
            return "http://\(authority)/\(host)\(query)"
        }
        return "https://\(host)\(query)"
    }

    public func refresh(refreshToken: String) async -> RefreshOutcome {
        let request = HTTPRequest.form(tokenURL, [("grant_type", "refresh_token"), ("refresh_token", refreshToken)])
        switch await transport.send(request) {
        case .failure(let failure):
            return .transient(failure.refreshFailure, retryAfter: nil)
        case .success(let answer):
            let outcome = Self.descriptor.classify(answer).dated(answer.headers["date"]).redacting(refreshToken)
            // An ID token of another tenant (or of none) is no session of this account's: it is
            // not kept (a session of the account's own tenant is bound to it and set aside, never
            // refreshed here, when tenant_id changes).
            if case .refreshed(let issued) = outcome, let problem = tenantProblem(idToken: issued.idToken) { return .needsLogin(problem) }
            return outcome
        }
    }
}

