import TokendCore
import TokendProtocol

/// An identity provider a Firebase account signs in with (`tokenctl login ACCOUNT --idp ID`),
/// configured as `[account.NAME.idp."ID"]`: tokend runs the provider's own OAuth sign-in and
/// hands what it returned to Firebase's `signInWithIdp`, or signs in through the project's
/// hosted handler (README.md, "Other identity providers"; docs/architecture.md).
public struct IdentityProvider: Sendable, Equatable {
    /// What Firebase is given: an OpenID Connect provider's ID token (with the raw nonce), or
    /// the access token of an OAuth 2.0-only provider, which Firebase takes to the provider's
    /// user API (Identity Toolkit REST, "Sign in with OAuth credential").
    public enum Credential: String, Sendable, Equatable, CaseIterable {
        case idToken = "id_token"
        case accessToken = "access_token"
    }

    /// How the sign-in runs.
    public enum SignIn: Sendable, Equatable {
        /// tokend runs the provider's OAuth sign-in with this client, and hands Firebase the token.
        case oauth(OIDCProvider.Settings, Credential)
        /// The project's Firebase-hosted handler signs in, driven by Firebase's JavaScript SDK
        /// on a page tokend serves on localhost (Apple, and any provider the console enables).
        case hosted(HostedSignIn)
    }

    /// Firebase's provider id: `google.com`, `microsoft.com`, `github.com`, `oidc.NAME`, ….
    public var id: String
    public var signIn: SignIn

    public init(id: String, signIn: SignIn) {
        self.id = id
        self.signIn = signIn
    }

    /// Keys of an `idp` table: the OAuth client and endpoints, and what Firebase is given.
    public static let keys: Set<String> = [
        "client_id", "client_secret", "client_auth", "issuer", "authorization_endpoint", "token_endpoint",
        "device_authorization_endpoint", "jwks_uri", "scopes", "credential",
    ]

    /// What tokend knows of a provider, so that its table needs only `client_id` (and a secret).
    struct Defaults {
        var name: String
        var issuer: String?
        var authorization: String? = nil
        var token: String? = nil
        var device: String? = nil
        var scopes: [String] = ["openid", "email", "profile"]
        var clientAuthentication: OIDCProvider.ClientAuthentication? = nil
        var credential: Credential = .idToken
    }

    /// The providers tokend knows, from each one's developer documentation.
    static let known: [String: Defaults] = [
        "google.com": Defaults(name: "Google", issuer: "https://accounts.google.com"),
        // GitHub is OAuth 2.0 only: no discovery, no ID token; its client secret goes in the
        // body (GitHub Docs, "Authorizing OAuth apps").
        "github.com": Defaults(
            name: "GitHub", issuer: "https://github.com", authorization: "https://github.com/login/oauth/authorize",
            token: "https://github.com/login/oauth/access_token", device: "https://github.com/login/device/code",
            scopes: ["read:user", "user:email"], clientAuthentication: .post, credential: .accessToken),
    ]

    /// Provider ids whose own sign-in tokend cannot run, and why: they sign in through the
    /// project's hosted handler (`auth_domain`) or not at all.
    static let oauthRefused: [String: String] = [
        "apple.com": "Sign in with Apple answers only an https page on a domain registered with Apple, never tokend's loopback listener: "
            + "sign in through the project's Firebase-hosted handler instead, with auth_domain = \"PROJECT.firebaseapp.com\" (README.md, \"Sign in with Apple\")",
        // Production answers a Microsoft ID or access token a client obtained itself, `common`
        // or one tenant, with INVALID_CREDENTIAL_OR_PROVIDER_ID (firebase-js-sdk#5802, #8913;
        // flutterfire#10865: the emulator takes it, production does not).
        "microsoft.com": "Firebase refuses Microsoft tokens a client obtained itself (INVALID_CREDENTIAL_OR_PROVIDER_ID): sign in through the project's Firebase-hosted handler, "
            + "with auth_domain = \"PROJECT.firebaseapp.com\" in place of client_id; or, for one tenant, add an Identity Platform OpenID Connect provider to the project "
            + "and configure it as idp.\"oidc.ID\" with issuer = \"https://login.microsoftonline.com/TENANT-ID/v2.0\" (README.md, \"Microsoft\")",
        "twitter.com": "X (Twitter) signs in with OAuth 1.0a, which tokend does not speak: set auth_domain to sign in through the project's Firebase-hosted handler",
    ]

    /// Names of providers tokend has no OAuth defaults for, as the Firebase console shows them.
    static let names = ["microsoft.com": "Microsoft", "apple.com": "Apple", "twitter.com": "X", "facebook.com": "Facebook", "yahoo.com": "Yahoo"]

    /// A short name for messages: `Microsoft`, `Apple`, or the id itself.
    public static func displayName(_ id: String) -> String {
        known[id]?.name ?? names[id] ?? id
    }

    /// tokenctl's option for signing in with `id`: `--google`, else `--idp ID`.
    public static func flag(_ id: String) -> String {
        id == "google.com" ? "--google" : "--idp \(id)"
    }

    /// Nil when tokend can run `id`'s own OAuth sign-in; else why not.
    static func oauthProblem(with id: String) -> String? {
        if let reason = oauthRefused[id] { return reason }
        if id.hasPrefix("saml.") {
            return "SAML providers answer with a browser form post, not OAuth: set auth_domain to sign in through the project's Firebase-hosted handler"
        }
        return nil
    }

    /// An `idp."ID"` table read with the known defaults filled in, through the OpenID Connect
    /// provider's own reader (one set of rules for URLs, secrets and client authentication).
    /// Errors name the key below `idp."ID"`.
    static func parse(id: String, _ values: [String: ProviderConfigValue], allowPlainHTTP: Bool) throws(ProviderConfigError) -> IdentityProvider {
        let prefix = "idp.\"\(id)\""
        if let problem = IdentityProviderID.problem(with: id) { throw ProviderConfigError(key: "idp", "\"\(id)\" \(problem)") }
        if values["auth_domain"] != nil {
            return IdentityProvider(id: id, signIn: .hosted(try HostedSignIn.parse(id: id, values, prefix: prefix, allowPlainHTTP: allowPlainHTTP)))
        }
        if let problem = oauthProblem(with: id) { throw ProviderConfigError(key: prefix, problem) }
        for key in values.keys.sorted() where !keys.contains(key) {
            throw ProviderConfigError(key: "\(prefix).\(key)", "unknown key (known: \(keys.sorted().joined(separator: ", ")))")
        }
        let defaults = known[id] ?? Defaults(name: id, issuer: nil)
        var filled = values
        func fill(_ key: String, _ value: String?) {
            if filled[key] == nil, let value { filled[key] = .string(value) }
        }
        fill("issuer", defaults.issuer)
        fill("authorization_endpoint", defaults.authorization)
        fill("token_endpoint", defaults.token)
        fill("device_authorization_endpoint", defaults.device)
        if filled["client_secret"] != nil { fill("client_auth", defaults.clientAuthentication?.rawValue) }
        if filled["scopes"] == nil { filled["scopes"] = .strings(defaults.scopes) }
        let credentialValue = filled.removeValue(forKey: "credential")
        filled[PlainHTTP.optInKey] = .boolean(allowPlainHTTP)
        let parsed: any ProviderSettings
        do {
            parsed = try OIDCProvider.descriptor.parse(filled, [:])
        } catch {
            throw ProviderConfigError(key: error.key.map { "\(prefix).\($0)" } ?? prefix, error.message)
        }
        guard let oauth = parsed as? OIDCProvider.Settings else { throw ProviderConfigError(key: prefix, "is not an OAuth client") }
        var credential = defaults.credential
        if let credentialValue {
            guard case .string(let text) = credentialValue, let chosen = Credential(rawValue: text) else {
                throw ProviderConfigError(key: "\(prefix).credential", "must be \"id_token\" or \"access_token\"")
            }
            credential = chosen
        }
        if credential == .idToken, !oauth.scopes.contains("openid") {
            throw ProviderConfigError(key: "\(prefix).scopes", "must include \"openid\": Firebase is given the provider's ID token (or set credential = \"access_token\")")
        }
        return IdentityProvider(id: id, signIn: .oauth(oauth, credential))
    }
}
