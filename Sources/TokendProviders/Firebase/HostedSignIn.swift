import TokendCore

/// A sign-in through the Firebase project's own hosted handler
/// (`https://AUTH_DOMAIN/__/auth/handler`), for providers whose answer can only reach an https
/// page registered with them — Apple above all, whose setup in the Firebase console registers
/// exactly that handler as the return URL. tokend serves a page on `http://localhost:PORT/`;
/// in the user's browser it loads Firebase's JavaScript SDK, which signs in with a popup at the
/// handler, and posts the session it got (the Firebase refresh token) back to tokend's listener
/// (README.md, "Sign in with Apple"; docs/security.md, "The hosted sign-in page").
public struct HostedSignIn: Sendable, Equatable {
    /// The project's auth domain (`PROJECT.firebaseapp.com`, or a custom domain the project
    /// serves the handler on): the SDK's `authDomain`.
    public var authDomain: String
    /// Scopes asked of the provider (`email`, `name` for Apple).
    public var scopes: [String]
    /// Where the page loads Firebase's JavaScript SDK from: `firebase-app.js` and
    /// `firebase-auth.js` under it.
    public var sdk: String
    /// What the page passes to `OAuthProvider.setCustomParameters` (HostedSignIn+CustomParameters.swift).
    public var customParameters: [String: String]

    /// The SDK release the page loads: the modular build Google serves for `<script type=module>`
    /// (firebase.google.com, "Add Firebase to your JavaScript project", CDN). Pinned, so that
    /// the page runs the same code every time.
    public static let defaultSDK = "https://www.gstatic.com/firebasejs/10.14.1"

    /// Keys of a hosted `idp` table.
    static let keys: Set<String> = ["auth_domain", "scopes", "firebase_sdk", "custom_parameters"]

    public init(authDomain: String, scopes: [String], sdk: String = defaultSDK, customParameters: [String: String] = [:]) {
        self.authDomain = authDomain
        self.scopes = scopes
        self.sdk = sdk
        self.customParameters = customParameters
    }

    static func parse(id: String, _ values: [String: ProviderConfigValue], prefix: String, allowPlainHTTP: Bool) throws(ProviderConfigError) -> HostedSignIn {
        for key in values.keys.sorted() where !keys.contains(key) {
            throw ProviderConfigError(
                key: "\(prefix).\(key)",
                "does not go with auth_domain: the project's hosted handler signs in with the client configured in the Firebase console (known: \(keys.sorted().joined(separator: ", ")))")
        }
        var reader = values
        reader[PlainHTTP.optInKey] = .boolean(allowPlainHTTP)
        let read = ProviderConfigReader(reader)
        let authDomain: String
        do {
            authDomain = try read.string("auth_domain") ?? ""
        } catch {
            throw ProviderConfigError(key: "\(prefix).auth_domain", error.message)
        }
        // Exactly host[:port]: it becomes `https://AUTH_DOMAIN/__/auth/handler` in the page.
        guard PlainHTTP.hostAndPort(authDomain) != nil, !authDomain.contains("/") else {
            throw ProviderConfigError(key: "\(prefix).auth_domain", "must be the project's auth domain, such as my-project.firebaseapp.com (no scheme, no path)")
        }
        let scopes: [String]
        let sdk: String
        let customParameters = try parseCustomParameters(id: id, values["custom_parameters"], key: "\(prefix).custom_parameters")
        do {
            scopes = try read.strings("scopes") ?? (id == "apple.com" ? ["email", "name"] : [])
            sdk = try read.url("firebase_sdk") ?? defaultSDK
        } catch {
            throw ProviderConfigError(key: error.key.map { "\(prefix).\($0)" } ?? prefix, error.message)
        }
        return HostedSignIn(authDomain: authDomain, scopes: scopes, sdk: sdk.hasSuffix("/") ? String(sdk.dropLast()) : sdk, customParameters: customParameters)
    }

    /// The page tokend serves at `/`. Every value is JSON-encoded into the script, `<` escaped,
    /// so nothing configured can end the script element. The session goes back to `/session`
    /// on the page's own origin with the login's `state`; auth state lives in memory only, so
    /// the browser keeps no copy of the refresh token.
    func page(apiKey: String, providerID: String, emulatorHost: String?, state: String, tenantID: String? = nil) -> String {
        let settings: [(String, String?)] = [
            ("apiKey", apiKey), ("authDomain", authDomain), ("providerId", providerID), ("state", state),
            ("emulator", emulatorHost.map { "http://" + $0 }), ("tenantId", tenantID),
        ]
        let values = settings.map { name, value in "\(Self.json(name)): \(value.map(Self.json) ?? "null")" }.joined(separator: ", ")
        let scopes = "[" + self.scopes.map(Self.json).joined(separator: ", ") + "]"
        let custom = "{" + customParameters.sorted { $0.key < $1.key }.map { Self.json($0.key) + ": " + Self.json($0.value) }.joined(separator: ", ") + "}"
        let name = IdentityProvider.displayName(providerID)
        // The same words tokenctl prints for each failure (HostedSignIn+Failures.swift).
        var entries: [String] = []
        for code in Self.adviceCodes {
            guard let failure = failure(code: code, id: providerID) else { continue }
            entries.append(Self.json(code) + ": " + Self.json(failure.advice))
        }
        let advice = "{" + entries.joined(separator: ", ") + "}"
        return """
            <!DOCTYPE html>
            <html><head><meta charset="utf-8"><title>tokend: sign in with \(Self.html(name))</title></head>
            <body>
            <h1>Sign in with \(Self.html(name))</h1>
            <p>tokend signs you in through your Firebase project's own sign-in page, then keeps the session.</p>
            <button id="signin" type="button">Continue with \(Self.html(name))</button>
            <p id="status"></p>
            <script type="module">
            import { initializeApp } from \(Self.json(sdk + "/firebase-app.js"));
            import { initializeAuth, inMemoryPersistence, browserPopupRedirectResolver, connectAuthEmulator, signInWithPopup, OAuthProvider } from \(Self.json(sdk + "/firebase-auth.js"));
            const settings = { \(values) };
            const scopes = \(scopes);
            const customParameters = \(custom);
            const advice = \(advice);
            const status = document.getElementById("status");
            const app = initializeApp({ apiKey: settings.apiKey, authDomain: settings.authDomain });
            const auth = initializeAuth(app, { persistence: inMemoryPersistence, popupRedirectResolver: browserPopupRedirectResolver });
            if (settings.emulator) connectAuthEmulator(auth, settings.emulator, { disableWarnings: true });
            if (settings.tenantId) auth.tenantId = settings.tenantId;
            async function report(body) {
              const answer = await fetch("/session", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(Object.assign({ state: settings.state }, body)) });
              return answer.ok;
            }
            document.getElementById("signin").addEventListener("click", async () => {
              status.textContent = "Signing in…";
              const provider = new OAuthProvider(settings.providerId);
              for (const scope of scopes) provider.addScope(scope);
              if (Object.keys(customParameters).length > 0) provider.setCustomParameters(customParameters);
              try {
                const result = await signInWithPopup(auth, provider);
                const kept = await report({ refresh_token: result.user.refreshToken });
                status.textContent = kept ? "Signed in. tokend has your session. You can close this tab." : "tokend did not take the session; tokenctl says why.";
              } catch (error) {
                // The SDK's message says why (an expired client secret's AADSTS text): tokend
                // bounds and cleans it, and keeps no token that may be in it.
                await report({ error: String(error && error.code || "failed"), message: String(error && error.message || "").slice(0, 2000) }).catch(() => false);
                const code = String(error && error.code || error);
                const key = code.startsWith(\(Self.json(Self.refererBlocked))) ? \(Self.json(Self.refererBlocked)) : code;
                status.textContent = "Sign-in failed (" + code + "): " + (advice[key] || "try again") + ".";
              }
            });
            </script>
            </body></html>
            """
    }

    /// A JSON string literal that is also safe inside `<script>`: `<` is `\u003c`.
    static func json(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "<": out += "\\u003c"
            case _ where scalar.value < 0x20 || scalar.value == 0x2028 || scalar.value == 0x2029:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }

    static func html(_ text: String) -> String {
        text.replacing("&", with: "&amp;").replacing("<", with: "&lt;").replacing(">", with: "&gt;").replacing("\"", with: "&quot;")
    }
}
