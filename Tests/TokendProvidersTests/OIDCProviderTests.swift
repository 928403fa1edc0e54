import Foundation
import Testing
import TokendCore
import TokendFakes
import TokendTestSupport
@testable import TokendProviders

/// `OIDCProvider` against the fake OIDC server over real HTTP: what oidc-provider-mock cannot show.
@Suite("OIDCProvider", .timeLimit(.minutes(1)))
struct OIDCProviderTests {
    static let basic = "Basic " + Data("cli:s%3Ac".utf8).base64EncodedString()

    @Test func refreshWithBasicAuthRotationAndStringLifetime() async throws {
        try await withProvider(secret: "s:c") { fake, provider in
            fake.script([.object(200, ["access_token": "a1", "refresh_token": "r2", "expires_in": "120", "scope": "openid email"])])
            let outcome = await provider.refresh(refreshToken: "r1")
            #expect(outcome == .refreshed(IssuedTokens(refreshToken: "r2", accessToken: "a1", expiresIn: 120, scopes: ["openid", "email"])))
            let token = try #require(fake.requests.last { $0.path == "/token" })
            // RFC 6749 §2.3.1: id and secret form-encoded, then Basic.
            #expect(token.authorization == Self.basic)
            #expect(token.form["grant_type"] == "refresh_token" && token.form["refresh_token"] == "r1")
            #expect(token.form["client_secret"] == nil)
            // Discovery was fetched once for two refreshes.
            _ = await provider.refresh(refreshToken: "r2")
            #expect(fake.requests.filter { $0.path == "/.well-known/openid-configuration" }.count == 1)
        }
    }

    @Test func aMissingLifetimeFallsBackToTheDocumentedDefault() async throws {
        try await withProvider { fake, provider in
            fake.script([.object(200, ["access_token": "opaque"])])
            #expect(await provider.refresh(refreshToken: "r") == .refreshed(IssuedTokens(accessToken: "opaque", expiresIn: OIDCProvider.defaultLifetime)))
        }
    }

    @Test func clientSecretPostAndPublicClients() async throws {
        try await withProvider(secret: "s", auth: .post) { fake, provider in
            _ = await provider.refresh(refreshToken: "r")
            let token = try #require(fake.requests.last { $0.path == "/token" })
            #expect(token.authorization == nil && token.form["client_id"] == "cli" && token.form["client_secret"] == "s")
        }
        try await withProvider { fake, provider in
            _ = await provider.refresh(refreshToken: "r")
            let token = try #require(fake.requests.last { $0.path == "/token" })
            #expect(token.authorization == nil && token.form["client_id"] == "cli" && token.form["client_secret"] == nil)
        }
    }

    @Test func oauthErrorsAreClassified() async throws {
        try await withProvider { fake, provider in
            fake.script([
                .object(400, ["error": "invalid_grant"]), .object(401, ["error": "invalid_client"]),
                .object(400, ["error": "unauthorized_client"]), .object(503, ["error": "temporarily_unavailable"]),
            ])
            guard case .needsLogin = await provider.refresh(refreshToken: "r") else { Issue.record("invalid_grant"); return }
            guard case .misconfigured = await provider.refresh(refreshToken: "r") else { Issue.record("invalid_client"); return }
            guard case .misconfigured = await provider.refresh(refreshToken: "r") else { Issue.record("unauthorized_client"); return }
            guard case .transient = await provider.refresh(refreshToken: "r") else { Issue.record("temporarily_unavailable"); return }
        }
    }

    /// A discovery document naming another issuer is refused, and nothing goes to its endpoints.
    @Test func aDiscoveryDocumentForAnotherIssuerIsRefused() async throws {
        try await withProvider { fake, provider in
            fake.claimIssuer("https://evil.example.com")
            let outcome = await provider.refresh(refreshToken: "r")
            guard case .misconfigured(let failure) = outcome else { Issue.record("expected misconfigured, got \(outcome)"); return }
            #expect(failure.code == "issuer_mismatch")
            #expect(!fake.requests.contains { $0.path == "/token" })
        }
    }

    @Test func revocationSendsTheTokenWithTheClientAuthentication() async throws {
        try await withProvider(secret: "s:c") { fake, provider in
            #expect(await provider.revoke(refreshToken: "r-revoke") == .revoked)
            let revoke = try #require(fake.requests.last { $0.path == "/revoke" })
            #expect(revoke.authorization == Self.basic)
            #expect(revoke.form["token"] == "r-revoke" && revoke.form["token_type_hint"] == "refresh_token")
        }
    }

    /// Every polling answer of RFC 8628 and Google's variants, then a session.
    @Test func deviceGrantPollsThroughEveryAnswer() async throws {
        try await withProvider { fake, provider in
            fake.script([
                .object(400, ["error": "authorization_pending"]), .object(428, [:]), .object(400, ["error": "slow_down"]),
                .object(200, ["access_token": "a", "refresh_token": "r-device", "expires_in": 60]),
            ])
            var steps: [LoginStep] = []
            for try await step in provider.login(LoginRequest(method: .device, timeout: 50)) { steps.append(step) }
            guard case .userCode(let uri, _, let code, let expiresIn) = steps.first else { Issue.record("no user code first"); return }
            #expect(uri.hasSuffix("/activate") && code == "WDJB-MJHT" && expiresIn == 600)
            guard case .done(let session) = steps.last else { Issue.record("no session"); return }
            #expect(session.tokens.refreshToken == "r-device")
            let polls = fake.requests.filter { $0.path == "/token" }
            #expect(polls.count == 4)
            #expect(polls.allSatisfy { $0.form["device_code"] == "device-code-1" })
        }
    }

    @Test(arguments: [("access_denied", LoginFailure.Kind.denied), ("expired_token", .denied)])
    func deviceGrantEndsOnRefusal(code: String, kind: LoginFailure.Kind) async throws {
        try await withProvider { fake, provider in
            fake.script([.object(400, ["error": code])])
            var failure: LoginFailure?
            do {
                for try await _ in provider.login(LoginRequest(method: .device, timeout: 30)) {}
            } catch let error as LoginFailure {
                failure = error
            }
            #expect(failure?.kind == kind && failure?.code == code)
        }
    }

    @Test func narrowedScopesAreTheOnesNotGranted() {
        let session = SignedIn(tokens: IssuedTokens(), grantedScopes: ["openid"], requestedScopes: ["openid", "email", "offline_access"])
        #expect(session.narrowedScopes == ["email", "offline_access"])
        #expect(SignedIn(tokens: IssuedTokens(), grantedScopes: nil, requestedScopes: ["openid"]).narrowedScopes.isEmpty)
    }

    /// RFC 6749 §6 and RFC 8707 on the refresh grant: `scope` and `resource` (or `audience`) go
    /// with the client authentication; the fake mints within the grant and refuses beyond it.
    @Test func aNarrowedGrantCarriesScopeAndAudience() async throws {
        try await withProvider(secret: "s:c") { fake, provider in
            fake.grant(refreshToken: "r1", scopes: ["openid", "read:x", "write:y"], rotating: true)
            let narrowed = await provider.refresh(refreshToken: "r1", narrowedTo: TokenScope(scopes: ["read:x"], audience: "https://api.example.com"))
            guard case .refreshed(let issued) = narrowed else { Issue.record("\(narrowed)"); return }
            #expect(issued.scopes == ["read:x"] && issued.refreshToken != nil)
            let grant = try #require(fake.refreshGrants.last)
            #expect(grant.authorization == Self.basic)
            #expect(grant.form["scope"] == "read:x" && grant.form["resource"] == "https://api.example.com" && grant.form["audience"] == nil)
            #expect(fake.minted(try #require(issued.accessToken)) == FakeOIDC.Minted(scopes: ["read:x"], resource: "https://api.example.com", refreshToken: "r1"))
            // Beyond the grant: the provider's invalid_scope, classified for the engine to refuse the key.
            let wider = await provider.refresh(refreshToken: try #require(issued.refreshToken), narrowedTo: TokenScope(scopes: ["admin"]))
            guard case .misconfigured(let failure) = wider else { Issue.record("\(wider)"); return }
            #expect(failure.code == "invalid_scope")
            // The rotated-away refresh token is dead at the fake.
            guard case .needsLogin = await provider.refresh(refreshToken: "r1", narrowedTo: TokenScope(scopes: ["read:x"])) else {
                Issue.record("a rotated-away refresh token was accepted"); return
            }
        }
        try await withProvider(audienceParameter: .audience) { fake, provider in
            fake.grant(refreshToken: "r1", scopes: ["openid"])
            _ = await provider.refresh(refreshToken: "r1", narrowedTo: TokenScope(scopes: [], audience: "https://api.example.com"))
            let grant = try #require(fake.refreshGrants.last)
            #expect(grant.form["audience"] == "https://api.example.com" && grant.form["resource"] == nil && grant.form["scope"] == nil)
        }
    }

    @Test func theAudienceParameterIsConfigurable() throws {
        let parse = OIDCProvider.descriptor.parse
        let base: [String: ProviderConfigValue] = ["issuer": .string("https://idp.example.com"), "client_id": .string("c")]
        let auth0 = try parse(base.merging(["audience_parameter": .string("audience")]) { $1 }, [:]) as? OIDCProvider.Settings
        #expect(auth0?.audienceParameter == .audience)
        #expect((try parse(base, [:]) as? OIDCProvider.Settings)?.audienceParameter == .resource)
        #expect(throws: ProviderConfigError.self) { try parse(base.merging(["audience_parameter": .string("aud")]) { $1 }, [:]) }
    }

    private func withProvider(
        secret: String? = nil, auth: OIDCProvider.ClientAuthentication? = nil, audienceParameter: OIDCProvider.AudienceParameter = .resource,
        _ body: (FakeOIDC, OIDCProvider) async throws -> Void
    ) async throws {
        let fake = try await FakeOIDC.start()
        let transport = HTTPTransport(environment: [:])
        var settings = OIDCProvider.Settings(issuer: fake.issuer, clientID: "cli", clientSecret: secret, clientAuthentication: auth)
        settings.audienceParameter = audienceParameter
        let provider = OIDCProvider(settings: settings, transport: transport)
        do {
            try await body(fake, provider)
        } catch {
            await transport.shutdown()
            await fake.shutdown()
            throw error
        }
        await transport.shutdown()
        await fake.shutdown()
    }
}
