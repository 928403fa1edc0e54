import Foundation
import Testing
import TokendCore
import TokendProviders
import TokendTestSupport

/// `OIDCProvider.login` (the browser flow: authorization code, PKCE S256, loopback redirect)
/// against oidc-provider-mock, with the provider's form driven over HTTP as a browser would.
@Suite(.serialized) struct OIDCLoginFlowTests {
    @Test func browserLoginRefusesAWrongStateThenSignsIn() async throws {
        // The mock's request log lives here; removed after the mock has stopped.
        let directory = try TemporaryDirectory(prefix: "tokend-oidc-login")
        defer { try? directory.remove() }
        let mock = try await OIDCProviderMock.start(directory: directory.url)
        let transport = HTTPTransport(environment: [:])
        do {
            let provider = OIDCProvider(
                settings: .init(issuer: mock.issuer, clientID: "tokend-test", clientSecret: "s", scopes: ["openid", "email"]), transport: transport)
            var steps: [LoginStep] = []
            var signedIn: SignedIn?
            for try await step in provider.login(LoginRequest(method: .browser, timeout: 60)) {
                steps.append(step)
                switch step {
                case .openURL(let url):
                    let components = try require(URLComponents(string: url))
                    let query = Dictionary(uniqueKeysWithValues: (components.queryItems ?? []).map { ($0.name, $0.value ?? "") })
                    #expect(query["code_challenge_method"] == "S256")
                    #expect(query["redirect_uri"]?.hasPrefix("http://127.0.0.1:") == true)
                    #expect((query["state"]?.count ?? 0) >= 43 && (query["nonce"]?.count ?? 0) >= 43)
                    // The user signs in at the provider's form; the browser is told to go back.
                    let form = try await mock.http.send(.form(url, [("sub", "carol")])).get()
                    let location = try require(form.headers["location"], "no redirect from the mock's form")
                    // A redirect carrying another state is refused, and the login keeps waiting.
                    let forged = location.replacingOccurrences(of: "state=", with: "state=forged")
                    let refused = try await mock.http.send(.get(forged)).get()
                    #expect(refused.status == 400)
                    let page = try await mock.http.send(.get(location)).get()
                    #expect(page.status == 200)
                    #expect(String(decoding: page.body, as: UTF8.self).contains("Signed in"))
                case .done(let session):
                    signedIn = session
                case .waiting, .userCode, .secondFactor:
                    break
                }
            }
            let session = try require(signedIn, "the flow ended without a session")
            #expect(session.tokens.refreshToken?.isEmpty == false)
            #expect(session.tokens.idToken.flatMap { JWTClaims(token: $0)?.subject } == "carol")
            #expect(session.grantedScopes == ["openid", "email"])
            // The listener answered one good redirect and closed.
            guard case .openURL(let url) = steps.first, let redirect = URLComponents(string: url)?.queryItems?.first(where: { $0.name == "redirect_uri" })?.value
            else { throw HarnessError("no URL step first") }
            #expect(await transport.send(.get(redirect)).isFailure)
            // And the session refreshes.
            let refreshed = await provider.refresh(refreshToken: session.tokens.refreshToken ?? "")
            if case .refreshed = refreshed {} else { Issue.record("the new session does not refresh: \(refreshed)") }
        } catch {
            await transport.shutdown()
            await mock.stop()
            throw error
        }
        await transport.shutdown()
        await mock.stop()
    }

    @Test func aLoginNotFinishedInTimeTimesOut() async throws {
        // The mock's request log lives here; removed after the mock has stopped.
        let directory = try TemporaryDirectory(prefix: "tokend-oidc-timeout")
        defer { try? directory.remove() }
        let mock = try await OIDCProviderMock.start(directory: directory.url)
        let transport = HTTPTransport(environment: [:])
        let provider = OIDCProvider(settings: .init(issuer: mock.issuer, clientID: "c", clientSecret: "s"), transport: transport)
        var failure: LoginFailure?
        do {
            for try await _ in provider.login(LoginRequest(method: .browser, timeout: 1)) {}
        } catch let error as LoginFailure {
            failure = error
        }
        #expect(failure?.kind == .timedOut)
        await transport.shutdown()
        await mock.stop()
    }
}

extension Result {
    var isFailure: Bool {
        if case .failure = self { return true }
        return false
    }
}
