import Testing
@testable import TokendProviders

/// The hosted sign-in page: what it loads and posts, and that no configured value can break out
/// of its script.
@Suite struct HostedSignInTests {
    @Test func thePageLoadsThePinnedSDKAndPostsToItsOwnOrigin() {
        let page = HostedSignIn(authDomain: "my-project.firebaseapp.com", scopes: ["email", "name"])
            .page(apiKey: "AIzaKey", providerID: "apple.com", emulatorHost: nil, state: "s1")
        #expect(page.contains(#"import { initializeApp } from "https://www.gstatic.com/firebasejs/10.14.1/firebase-app.js";"#))
        #expect(page.contains(#""authDomain": "my-project.firebaseapp.com""#) && page.contains(#""state": "s1""#))
        #expect(page.contains(#"const scopes = ["email", "name"];"#))
        #expect(page.contains("inMemoryPersistence") && page.contains(#"fetch("/session""#))
        #expect(page.contains(#""emulator": null"#))
        #expect(page.contains("Continue with Apple"))
    }

    @Test func noValueEndsTheScript() {
        let hostile = "k\"</script><script>alert(1)</script>\u{2028}"
        let page = HostedSignIn(authDomain: "a.example", scopes: [hostile]).page(apiKey: hostile, providerID: "oidc.x", emulatorHost: "127.0.0.1:9099", state: "s")
        #expect(!page.contains("</script><script>alert"))
        #expect(page.components(separatedBy: "</script>").count == 2, "one script element, closed once")
        #expect(page.contains(#"k\"\u003c/script>"#))
        #expect(page.contains(#""emulator": "http://127.0.0.1:9099""#))
        #expect(HostedSignIn.json("\u{1}") == #""\u0001""#)
    }

    /// Issue 44, item 2: the configured custom parameters reach `setCustomParameters`.
    @Test func customParametersGoToTheSDK() throws {
        let parameters = try HostedSignIn.parseCustomParameters(
            id: "microsoft.com", .table(["tenant": .string("contoso.onmicrosoft.com"), "prompt": .string("login consent")]), key: "k")
        let page = HostedSignIn(authDomain: "p.firebaseapp.com", scopes: [], customParameters: parameters)
            .page(apiKey: "k", providerID: "microsoft.com", emulatorHost: nil, state: "s")
        #expect(page.contains(#"const customParameters = {"prompt": "login consent", "tenant": "contoso.onmicrosoft.com"};"#))
        #expect(page.contains("provider.setCustomParameters(customParameters)"))
        #expect(throws: ProviderConfigError.self) {
            try HostedSignIn.parseCustomParameters(id: "microsoft.com", .table(["login_hint": .string("a b")]), key: "k")
        }
    }
}
