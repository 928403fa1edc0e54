import TokendCore

/// The provider's discovery document (OpenID Connect Discovery 1.0 §4), fetched once and kept in
/// memory for the provider's life: a reload that changes the account makes a new provider.
actor OIDCDiscovery {
    struct Document: Sendable, Equatable {
        var issuer: String
        var endpoints: OIDCProvider.Endpoints
    }

    let issuer: String
    let transport: HTTPTransport
    /// The account's `allow_plain_http`: discovered endpoints obey the same rule as configured ones.
    let allowPlainHTTP: Bool
    var cached: Document?

    init(issuer: String, transport: HTTPTransport, allowPlainHTTP: Bool) {
        self.issuer = issuer
        self.transport = transport
        self.allowPlainHTTP = allowPlainHTTP
    }

    var url: String {
        (issuer.hasSuffix("/") ? String(issuer.dropLast()) : issuer) + "/.well-known/openid-configuration"
    }

    /// The document, fetching it the first time. A failure is not cached: the next call tries
    /// again. `discovery_failed` is transient; `issuer_mismatch` and a bad document are not.
    func document() async -> Result<Document, RefreshFailure> {
        if let cached { return .success(cached) }
        let answer: HTTPAnswer
        switch await transport.send(.get(url)) {
        case .failure(let failure):
            return .failure(RefreshFailure(code: "discovery_failed", message: "discovery at \(url) failed: \(failure.message)"))
        case .success(let got):
            answer = got
        }
        guard answer.status == 200 else {
            let failure = RefreshFailure(code: "discovery_failed", message: "discovery at \(url) answered HTTP \(answer.status)")
            return .failure(RefreshClassifier.isTransientStatus(answer.status) ? failure
                : RefreshFailure(code: "discovery_unavailable", message: failure.message + "; set the endpoints in the account instead"))
        }
        guard let wire = try? JSONDecoder().decode(Wire.self, from: Data(answer.body)) else {
            return .failure(RefreshFailure(code: "discovery_invalid", message: "discovery at \(url) is not a discovery document"))
        }
        // OpenID Connect Discovery §4.3: the document must name the issuer it was fetched for,
        // or tokens would be trusted from (and secrets sent to) a different provider. Microsoft's
        // multi-tenant documents name a template instead; ID tokens are then checked against it.
        guard IssuerTemplate.isTemplate(wire.issuer, of: issuer) else {
            return .failure(RefreshFailure(
                code: "issuer_mismatch", message: "discovery at \(url) names issuer \"\(wire.issuer)\", not the configured \"\(issuer)\""))
        }
        let endpoints = [wire.token_endpoint, wire.authorization_endpoint, wire.device_authorization_endpoint, wire.revocation_endpoint, wire.jwks_uri]
        for endpoint in endpoints.compactMap({ $0 }) where !PlainHTTP.isAcceptableURL(endpoint, allowPlainHTTP: allowPlainHTTP) {
            return .failure(RefreshFailure(code: "discovery_invalid", message: "discovery names an endpoint that is not https: \(endpoint)"))
        }
        let document = Document(issuer: wire.issuer, endpoints: OIDCProvider.Endpoints(
            token: wire.token_endpoint, authorization: wire.authorization_endpoint, deviceAuthorization: wire.device_authorization_endpoint,
            revocation: wire.revocation_endpoint, jwks: wire.jwks_uri))
        cached = document
        return .success(document)
    }

    // snake_case field names mirror the wire.
    private struct Wire: Decodable {
        var issuer: String
        var token_endpoint: String?
        var authorization_endpoint: String?
        var device_authorization_endpoint: String?
        var revocation_endpoint: String?
        var jwks_uri: String?
    }
}
