import Foundation
import Testing
import TokendCore
import TokendProviders
import TokendFakes
import TokendTestSupport

/// `--google` without the OpenID Connect flow of this build: the exchange at `signInWithIdp`,
/// driven by a stand-in for Google's browser sign-in that hands over an ID token minted as
/// Google's issuer would (the fake's `googleIDToken`).
@Suite struct FirebaseGoogleExchangeTests {
    /// Plays Google's browser flow: shows the URL, then "returns" with the ID token.
    struct GoogleStandIn: TokenProvider {
        let kind = ProviderKind.oidc
        let idToken: String
        func refresh(refreshToken: String) async -> RefreshOutcome { .misconfigured(RefreshFailure(code: "n/a", message: "n/a")) }
        func login(_ request: LoginRequest) -> AsyncThrowingStream<LoginStep, any Error> {
            AsyncThrowingStream { continuation in
                continuation.yield(.openURL("https://accounts.google.com/o/oauth2/v2/auth?client_id=test"))
                continuation.yield(.done(SignedIn(tokens: IssuedTokens(refreshToken: "google-refresh", idToken: idToken), signInProvider: "oidc")))
                continuation.finish()
            }
        }
    }

    func provider(_ fake: FakeFirebase, transport: HTTPTransport, idToken: String) -> FirebaseProvider {
        var provider = FirebaseProvider(apiKey: "test-api-key", emulatorHost: fake.emulatorHost, transport: transport)
        provider.identitySignIns["google.com"] = .oauth(GoogleStandIn(idToken: idToken), .idToken)
        return provider
    }

    /// A fake Firebase and a transport for the body, both shut down before it returns.
    func withGoogleWorld(_ options: FakeFirebase.Options, _ body: (FakeFirebase, HTTPTransport) async throws -> Void) async throws {
        let fake = try await FakeFirebase.start(options: options)
        try await withTearDown((fake, HTTPTransport(environment: [:])), tearDown: { fake, transport in
            await transport.shutdown()
            try? await fake.shutdown()
        }) { fake, transport in try await body(fake, transport) }
    }

    /// `login --google`, as the daemon decodes it.
    static var google: LoginRequest {
        var request = LoginRequest(method: .idp)
        request.identityProvider = "google.com"
        return request
    }

    func run(_ provider: FirebaseProvider, _ request: LoginRequest) async -> (steps: [LoginStep], failure: LoginFailure?) {
        var steps: [LoginStep] = []
        do {
            for try await step in provider.login(request) { steps.append(step) }
            return (steps, nil)
        } catch {
            return (steps, error as? LoginFailure)
        }
    }

    @Test func googleIDTokenSignsInCreatesAndLinksKeepingTheUid() async throws {
        var options = FakeFirebase.Options()
        options.identityProviders["google.com"]?.clientIDs = ["test-client.apps.googleusercontent.com"]
        try await withGoogleWorld(options) { fake, transport in
            let google = FakeFirebase.googleIDToken(subject: "g-1", email: "lin@example.com", audience: "test-client.apps.googleusercontent.com")

            let (steps, failure) = await run(provider(fake, transport: transport, idToken: google), Self.google)
            #expect(failure == nil)
            #expect(steps.first == .openURL("https://accounts.google.com/o/oauth2/v2/auth?client_id=test"))
            guard case .done(let signedIn)? = steps.last else { Issue.record("no session: \(steps)"); return }
            #expect(signedIn.signInProvider == "google.com")
            let idToken = try #require(signedIn.tokens.idToken)
            let claims = try #require(FirebaseClaims(token: idToken))
            #expect(fake.user(try #require(claims.uid))?.providers == ["google.com"])
            #expect(fake.requests.last?.path.hasSuffix("accounts:signInWithIdp") == true)

            // An anonymous user links another Google identity and keeps its uid.
            let anonymous = fake.createUser()
            var link = Self.google
            link.linkingIDToken = anonymous.idToken
            let other = FakeFirebase.googleIDToken(subject: "g-2", email: "mo@example.com", audience: "test-client.apps.googleusercontent.com")
            let (linked, linkFailure) = await run(provider(fake, transport: transport, idToken: other), link)
            #expect(linkFailure == nil)
            guard case .done(let upgraded)? = linked.last else { Issue.record("no session: \(linked)"); return }
            #expect(FirebaseClaims(token: upgraded.tokens.idToken ?? "")?.uid == anonymous.uid)

            // g-1 already belongs to the first user: linking it to the anonymous one is refused.
            let (_, taken) = await run(provider(fake, transport: transport, idToken: google), link)
            #expect(taken?.code == "FEDERATED_USER_ID_ALREADY_LINKED")
            #expect(taken?.kind == .denied)
        }
    }

    /// An ID token issued to a client the project does not accept: HTTP 400 (the emulator's
    /// `signInWithIdp` answers every ID-token error so, 200 with `errorMessage` only for link
    /// conflicts asked with `returnIdpCredential`), and a configuration error, not "sign in again".
    @Test func anIDTokenForAnotherClientIsAConfigurationError() async throws {
        var options = FakeFirebase.Options()
        options.identityProviders["google.com"]?.clientIDs = ["test-client.apps.googleusercontent.com"]
        try await withGoogleWorld(options) { fake, transport in
            let wrongAudience = FakeFirebase.googleIDToken(subject: "g-3", email: nil, audience: "someone-else")
            let (_, failure) = await run(provider(fake, transport: transport, idToken: wrongAudience), Self.google)
            #expect(failure?.code == "INVALID_IDP_RESPONSE")
            #expect(failure?.kind == .misconfigured)
            #expect(fake.requests.last?.status == 400)
            #expect(failure.map { !$0.message.contains(wrongAudience) } == true)
        }
    }
}
