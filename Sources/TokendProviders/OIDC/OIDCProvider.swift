import TokendCore

extension ProviderKind {
    public static let oidc = ProviderKind(rawValue: "oidc")
}

/// Any OpenID Connect or plain OAuth 2.0 provider: endpoints from discovery (or the account's
/// configuration), refresh (RFC 6749 §6) and revocation (RFC 7009) with the account's client
/// authentication.
public struct OIDCProvider: TokenProvider {
    /// How the client proves who it is at the token and revocation endpoints (RFC 6749 §2.3).
    public enum ClientAuthentication: String, Sendable, Equatable, CaseIterable {
        /// HTTP Basic with the form-encoded id and secret: the default when there is a secret.
        case basic = "client_secret_basic"
        /// `client_id` and `client_secret` in the form body.
        case post = "client_secret_post"
        /// A public client: `client_id` in the body, no secret.
        case none
    }

    /// The form parameter that carries a token request's audience: RFC 8707's `resource` (the
    /// default; Microsoft Entra v1, Keycloak, Okta read it), or `audience` (Auth0 and others).
    public enum AudienceParameter: String, Sendable, Equatable, CaseIterable {
        case resource
        case audience
    }

    /// Endpoints set in the configuration win over discovery; any left nil are discovered.
    public struct Endpoints: Sendable, Equatable {
        public var token: String?
        public var authorization: String?
        public var deviceAuthorization: String?
        public var revocation: String?
        public var jwks: String?

        public init(token: String? = nil, authorization: String? = nil, deviceAuthorization: String? = nil, revocation: String? = nil, jwks: String? = nil) {
            self.token = token
            self.authorization = authorization
            self.deviceAuthorization = deviceAuthorization
            self.revocation = revocation
            self.jwks = jwks
        }
    }

    /// An account's `provider = "oidc"` table.
    public struct Settings: ProviderSettings, Equatable {
        public var issuer: String
        public var clientID: String
        /// Identifies the program, not the user (desktop clients' secrets are not secret).
        public var clientSecret: String?
        public var clientAuthentication: ClientAuthentication
        public var scopes: [String]
        public var tokenKind: TokenKind
        public var endpoints: Endpoints
        /// `allow_plain_http`: http endpoints off loopback (a trusted network's test server).
        public var allowPlainHTTP: Bool
        /// `audience_parameter`: how a `token` request's `audience` is sent.
        public var audienceParameter: AudienceParameter = .resource

        public init(
            issuer: String, clientID: String, clientSecret: String? = nil, clientAuthentication: ClientAuthentication? = nil,
            scopes: [String] = ["openid"], tokenKind: TokenKind = .access, endpoints: Endpoints = Endpoints(), allowPlainHTTP: Bool = false
        ) {
            self.allowPlainHTTP = allowPlainHTTP
            self.issuer = issuer
            self.clientID = clientID
            self.clientSecret = clientSecret
            self.clientAuthentication = clientAuthentication ?? (clientSecret == nil ? .none : .basic)
            self.scopes = scopes
            self.tokenKind = tokenKind
            self.endpoints = endpoints
        }

        public var descriptor: ProviderDescriptor { OIDCProvider.descriptor }
        public var defaultTokenKind: TokenKind { tokenKind }
        /// What a stored session is bound to: the issuer and client, and every configured URL
        /// that receives its refresh token (the token and revocation endpoints, when they
        /// override discovery). Without overrides this is what sessions were always bound to,
        /// so stored sessions keep working.
        public var endpoint: String {
            var binding = "oidc \(issuer) \(clientID)"
            if let token = endpoints.token { binding += " token=\(token)" }
            if let revocation = endpoints.revocation { binding += " revocation=\(revocation)" }
            return binding
        }
        /// Never the client secret.
        public var description: String { "oidc(issuer: \(issuer), client_id: \(clientID), auth: \(clientAuthentication.rawValue))" }

        public func makeProvider(transport: HTTPTransport) -> any TokenProvider {
            OIDCProvider(settings: self, transport: transport)
        }
    }

    /// Used when a token answer has no `expires_in` and no token is a JWT with `exp`. Five
    /// minutes is the shortest lifetime common providers issue (Keycloak's default), so a
    /// token is never served past its real end; a wrong guess costs only early refreshes.
    public static let defaultLifetime: Double = 300

    public static let descriptor = ProviderDescriptor(
        kind: .oidc,
        keys: ["issuer", "client_id", "client_secret", "client_auth", "scopes", "kind", "token_endpoint", "authorization_endpoint",
               "device_authorization_endpoint", "revocation_endpoint", "jwks_uri", "audience_parameter"],
        defaultTokenKind: .access, capabilities: [.scopedTokens], loginMethods: [.browser, .device],
        parse: { values, _ throws(ProviderConfigError) in
            let reader = ProviderConfigReader(values)
            let issuer = try reader.url("issuer", required: true) ?? ""
            let clientID = try reader.string("client_id", required: true) ?? ""
            let secret = try reader.string("client_secret")
            let authentication = try reader.choice("client_auth", ClientAuthentication.self)
            if authentication == .basic || authentication == .post, secret == nil {
                throw ProviderConfigError(key: "client_auth", "\(authentication!.rawValue) needs a client_secret")
            }
            let scopes = try reader.strings("scopes") ?? ["openid"]
            let kind = try reader.choice("kind", TokenKind.self) ?? .access
            let endpoints = Endpoints(
                token: try reader.url("token_endpoint"), authorization: try reader.url("authorization_endpoint"),
                deviceAuthorization: try reader.url("device_authorization_endpoint"), revocation: try reader.url("revocation_endpoint"),
                jwks: try reader.url("jwks_uri"))
            var settings = Settings(
                issuer: issuer, clientID: clientID, clientSecret: secret, clientAuthentication: authentication, scopes: scopes,
                tokenKind: kind, endpoints: endpoints, allowPlainHTTP: reader.allowsPlainHTTP)
            settings.audienceParameter = try reader.choice("audience_parameter", AudienceParameter.self) ?? .resource
            return settings
        },
        classify: { answer in
            RefreshClassifier.oauth(status: answer.status, body: answer.body, retryAfter: answer.retryAfter, defaultLifetime: defaultLifetime)
        })

    public let kind = ProviderKind.oidc
    let settings: Settings
    let transport: HTTPTransport
    let discovery: OIDCDiscovery

    public init(settings: Settings, transport: HTTPTransport) {
        self.settings = settings
        self.transport = transport
        self.discovery = OIDCDiscovery(issuer: settings.issuer, transport: transport, allowPlainHTTP: settings.allowPlainHTTP)
    }

    /// The endpoint `pick` selects: from the configuration, else from discovery.
    func endpoint(_ pick: @Sendable (Endpoints) -> String?, named name: String) async -> Result<String?, RefreshFailure> {
        if let configured = pick(settings.endpoints) { return .success(configured) }
        return await discovery.document().map { pick($0.endpoints) }
    }

    /// The form fields and headers that authenticate the client, added to an operation's fields.
    func authenticated(_ url: String, _ fields: [(String, String)]) -> HTTPRequest {
        var fields = fields
        var headers: [(String, String)] = []
        switch settings.clientAuthentication {
        case .basic:
            // RFC 6749 §2.3.1: id and secret are form-encoded before they are joined and encoded.
            let pair = FormEncoding.escaped(settings.clientID) + ":" + FormEncoding.escaped(settings.clientSecret ?? "")
            headers.append(("Authorization", "Basic " + Data(pair.utf8).base64EncodedString()))
        case .post:
            fields.append(("client_id", settings.clientID))
            fields.append(("client_secret", settings.clientSecret ?? ""))
        case .none:
            fields.append(("client_id", settings.clientID))
        }
        return .form(url, fields, headers: headers)
    }

    public func refresh(refreshToken: String) async -> RefreshOutcome {
        await refreshGrant(refreshToken: refreshToken, narrowing: [])
    }

    /// RFC 6749 §6: `scope` must be a subset of the grant's (the provider answers `invalid_scope`
    /// otherwise); the audience goes as `resource` (RFC 8707) or `audience`, as configured.
    public func refresh(refreshToken: String, narrowedTo scope: TokenScope) async -> RefreshOutcome {
        var narrowing: [(String, String)] = []
        if let scopes = scope.scopeParameter { narrowing.append(("scope", scopes)) }
        if let audience = scope.audience { narrowing.append((settings.audienceParameter.rawValue, audience)) }
        return await refreshGrant(refreshToken: refreshToken, narrowing: narrowing)
    }

    func refreshGrant(refreshToken: String, narrowing: [(String, String)]) async -> RefreshOutcome {
        let tokenEndpoint: String
        switch await endpoint({ $0.token }, named: "token_endpoint") {
        case .failure(let failure):
            return failure.code == "discovery_failed" ? .transient(failure, retryAfter: nil) : .misconfigured(failure)
        case .success(nil):
            return .misconfigured(RefreshFailure(code: "no_token_endpoint", message: "the provider's discovery document names no token_endpoint; set token_endpoint in the account"))
        case .success(let url?):
            tokenEndpoint = url
        }
        let request = authenticated(tokenEndpoint, [("grant_type", "refresh_token"), ("refresh_token", refreshToken)] + narrowing)
        switch await transport.send(request) {
        case .failure(let failure):
            return .transient(failure.refreshFailure, retryAfter: nil)
        case .success(let answer):
            return Self.descriptor.classify(answer).dated(answer.headers["date"]).redacting(refreshToken)
        }
    }

    /// RFC 7009: the refresh token (which ends the grant and its access tokens at most providers),
    /// with the same client authentication as the token endpoint.
    public func revoke(refreshToken: String) async -> RevocationOutcome {
        let revocationEndpoint: String
        switch await endpoint({ $0.revocation }, named: "revocation_endpoint") {
        case .failure(let failure):
            return .failed(failure)
        case .success(nil):
            return .unsupported("the provider has no revocation_endpoint (set one in the account if it has)")
        case .success(let url?):
            revocationEndpoint = url
        }
        let request = authenticated(revocationEndpoint, [("token", refreshToken), ("token_type_hint", "refresh_token")])
        switch await transport.send(request) {
        case .failure(let failure):
            return .failed(failure.refreshFailure)
        case .success(let answer) where answer.status == 200:
            return .revoked
        case .success(let answer):
            guard case .misconfigured(let failure) = RefreshClassifier.oauth(status: answer.status, body: answer.body, retryAfter: nil)
                .redacting(refreshToken)
            else {
                return .failed(RefreshFailure(code: "http_\(answer.status)", message: "the revocation endpoint answered HTTP \(answer.status)"))
            }
            return .failed(failure)
        }
    }
}
