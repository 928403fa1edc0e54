import Foundation
import Testing
import TokendCore
import TokendProviders
import TokendTestSupport

/// `OIDCProvider.login` (the browser flow: authorization code, PKCE S256, loopback redirect)
/// against oidc-provider-mock, with the provider's form driven over HTTP as a browser would.
@Suite(.serialized) struct OIDCLoginFlowTests {
    @Test func browserLoginRefusesAWrongStateThenSignsIn() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tokend-oidc-login-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let mock = try await OIDCProviderMock.start(directory: directory)
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
                case .waiting, .userCode:
                    break
                }
            }
            let session = try require(signedIn, "the flow ended without a session")
            #expect(session.tokens.refreshToken?.isEmpty == false)
            #expect(session.tokens.idToken.flatMap { JWTClaims(token: $0)?.subject } == "carol")
            #expect(session.grantedScopes == ["openid", "email"])
            // The listener answered one good redirect and closed.
            guard case .openURL(let url) = steps.first, let redirect = URLComponents(string: url)?.queryItems?.first(where: { $0.name == "redirect_uri" })?.value
            else { Issue.record("no URL step first"); return }
            #expect(await transport.send(.get(redirect)).isFailure)
            // And the session refreshes.
            guard case .refreshed = await provider.refresh(refreshToken: session.tokens.refreshToken ?? "") else {
                Issue.record("the new session does not refresh"); return
            }
        } catch {
            await transport.shutdown()
            await mock.stop()
            throw error
        }
        await transport.shutdown()
        await mock.stop()
    }

    /// The same flow with a real headless Chromium (selenium, Debian's chromedriver): it opens
    /// the URL the flow gave, submits the provider's form, follows the redirect to the loopback
    /// listener and shows its page.
    @Test func browserLoginWithHeadlessChromium() async throws {
        let python = URL(fileURLWithPath: OIDCProviderMock.executable).deletingLastPathComponent().appendingPathComponent("python3").path
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/chromedriver") else {
            throw HarnessError("chromium-driver is not installed: run scripts/test (it installs chromium and chromium-driver)")
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tokend-oidc-chromium-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let mock = try await OIDCProviderMock.start(directory: directory)
        let transport = HTTPTransport(environment: [:])
        let provider = OIDCProvider(settings: .init(issuer: mock.issuer, clientID: "tokend-test", clientSecret: "s"), transport: transport)
        var signedIn: SignedIn?
        var page = ""
        do {
            for try await step in provider.login(LoginRequest(method: .browser, timeout: 120)) {
                switch step {
                case .openURL(let url):
                    let run = try await offPool { try ChildProcess.run(python, ["-c", Self.seleniumScript, url], environment: ["PATH": "/usr/bin:/bin", "HOME": directory.path], timeout: 90) }
                    #expect(run.status == 0, "selenium: \(run.stderr)")
                    page = run.stdout
                case .done(let session): signedIn = session
                default: break
                }
            }
        } catch {
            await transport.shutdown()
            await mock.stop()
            throw error
        }
        #expect(page.contains("Signed in"), "the browser ended on: \(page)")
        #expect(signedIn?.tokens.idToken.flatMap { JWTClaims(token: $0)?.subject } == "dave")
        await transport.shutdown()
        await mock.stop()
    }

    static let seleniumScript = """
        import sys
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
        from selenium.webdriver.common.by import By
        from selenium.webdriver.support.ui import WebDriverWait
        options = webdriver.ChromeOptions()
        for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage"):
            options.add_argument(argument)
        driver = webdriver.Chrome(service=Service(executable_path="/usr/bin/chromedriver"), options=options)
        try:
            driver.get(sys.argv[1])
            driver.find_element(By.NAME, "sub").send_keys("dave")
            driver.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
            WebDriverWait(driver, 30).until(lambda d: d.current_url.startswith("http://127.0.0.1:") and "/callback" in d.current_url)
            WebDriverWait(driver, 30).until(lambda d: "Signed in" in d.page_source)
            print(driver.title)
        finally:
            driver.quit()
        """

    @Test func aLoginNotFinishedInTimeTimesOut() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tokend-oidc-timeout-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let mock = try await OIDCProviderMock.start(directory: directory)
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
