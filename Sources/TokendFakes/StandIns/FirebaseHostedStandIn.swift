import Crypto
import Foundation
import NIOConcurrencyHelpers
import TokendCore
import TokendProviders

/// Stand-ins for what a Firebase project's hosted sign-in runs in the user's browser, which this
/// machine cannot reach: Firebase's JavaScript SDK (the three calls tokend's page makes), the
/// project's auth handler at `AUTH_DOMAIN/__/auth/handler`, and Sign in with Apple. One server
/// on 127.0.0.1 plays all three; `authDomain` is its `host:port` (plain HTTP, where the real
/// handler is https).
///
/// | part | behaviour | source |
/// | --- | --- | --- |
/// | SDK | `initializeApp`, `initializeAuth`, `connectAuthEmulator`, `OAuthProvider.addScope`, `OAuthProvider.setCustomParameters`, `signInWithPopup` resolving to `{user: {refreshToken}}` or rejecting with `{code, message}` | firebase.google.com JS reference (`signInWithPopup`, `User.refreshToken`, `AuthError.code`, `setCustomParameters`) |
/// | SDK | a server refusal becomes `auth/` + the js-sdk map's code (`INVALID_IDP_RESPONSE` → `invalid-credential`, `USER_DISABLED` → `user-disabled`, `ADMIN_ONLY_OPERATION` → `admin-restricted-operation`, `TOO_MANY_ATTEMPTS_TRY_LATER` → `too-many-requests`, `TENANT_ID_MISMATCH` → `tenant-id-mismatch`), else the server's code or sentence lower-cased with `_` and spaces as `-` (`auth/requests-from-referer-<empty>-are-blocked.`); message `Firebase: DETAIL (auth/CODE).`, or `Firebase: Error (auth/CODE).` without a detail | js-sdk `api/errors.ts` `SERVER_ERROR_MAP`, `api/index.ts` `_performFetchWithErrorHandling` (split at " : ", unknown codes hyphenated), `core/util/assert.ts` (message form); firebase-js-sdk#5657 (the referrer code) |
/// | SDK | `failNext(code:message:)`: the next popup fails so at once (`auth/network-request-failed`, which no server answer can cause) | js-sdk `core/errors.ts` |
/// | Microsoft | an app of one tenant (`singleTenant`): a sign-in without that `tenant` custom parameter shows AADSTS50194 in the popup, which the user closes (`auth/popup-closed-by-user`) | JohnCoene/firebase#33, firebase/firebaseui-web#833 (AADSTS50194 at `/common`); Firebase Microsoft guide (`tenant`) |
/// | SDK | served as JavaScript modules with `Access-Control-Allow-Origin: *`, as gstatic serves them | browsers' module-script rules |
/// | handler | opens the provider with itself as the return URL and a hashed nonce; takes the provider's form post; calls `signInWithIdp` with the ID token and the raw nonce; hands the session to the opener | Firebase's Apple setup (the handler is the registered return URL); js-sdk `OAuthCredentialOptions.rawNonce` |
/// | Microsoft | played like Apple at the same `/auth/authorize` (Microsoft also posts a form with `response_mode=form_post`); ID token `iss` the user's tenant's issuer, with `tid`; the handler's `signInWithIdp` carries the handler's own `requestUri`, which production takes for Microsoft where it refuses a client's own token | Microsoft identity platform, "OpenID Connect" (form_post); firebase-js-sdk#5802 |
/// | Apple | `/auth/authorize` with `response_mode=form_post`: posts `code`, `id_token`, `state` (and `user` on first sign-in) to the return URL; ID token `iss` `https://appleid.apple.com`, `aud` the Services ID, `nonce`, `email_verified` as a string | Sign in with Apple JS and REST API docs |
public final class FirebaseHostedStandIn: FakeRoutes {
    /// Who approves at Apple: the user id (`sub`) and the email Apple shares.
    public typealias User = FederatedStandIn.User

    struct State: Sendable {
        var nextUser: User?
        /// Sign-ins under way at the handler, by `state`: the raw nonce, the API key and the provider.
        var pending: [String: (rawNonce: String, apiKey: String, providerID: String)] = [:]
        var issued: [String] = []
        /// The custom parameters of every sign-in the handler started, in order.
        var customParameters: [[String: String]] = []
        /// The next popup's failure, `(code, message)`.
        var nextFailure: (code: String, message: String)?
        /// The tenant the Microsoft app is registered in, when it is an app of one tenant.
        var singleTenant: String?
    }

    /// The Services ID the project's Apple provider is configured with.
    public let servicesID: String
    let exchange: @Sendable (_ apiKey: String, _ requestUri: String, _ postBody: String) -> (status: Int, body: [UInt8])
    let state = NIOLockedValueBox(State())
    let key = StandInKey()
    let http = StandInServer()

    /// `exchange` is the project's `signInWithIdp` (the fake Firebase's, in-process).
    public init(servicesID: String, exchange: @escaping @Sendable (_ apiKey: String, _ requestUri: String, _ postBody: String) -> (status: Int, body: [UInt8])) {
        self.servicesID = servicesID
        self.exchange = exchange
    }

    /// Faults on any of its routes; by default, the hosted handler's.
    public let faults = FaultLayer(defaultTarget: FakeFirebase.hostedHandlerPath)

    public func start() async throws {
        try await http.start(self)
    }

    func handle(_ request: IncomingRequest) -> Decision {
        Decision(action: .reply(answer(method: request.method, path: request.path, query: request.query, body: request.body)))
    }

    public func shutdown() async { await http.shutdown() }

    /// `host:port`: the account's `auth_domain`.
    public var authDomain: String { "127.0.0.1:\(http.port)" }
    /// The account's `firebase_sdk`.
    public var sdk: String { "http://\(authDomain)/sdk" }
    /// Apple's issuer, which the project's Apple provider trusts.
    public static let appleIssuer = "https://appleid.apple.com"

    /// The next sign-in at Apple is approved as `user`; without one Apple answers `user_cancelled_authorize`.
    public func approveNext(as user: User?) { state.withLockedValue { $0.nextUser = user } }

    /// The next popup fails at once with `code` and `message`.
    public func failNext(code: String, message: String) { state.withLockedValue { $0.nextFailure = (code, message) } }

    /// The project's Microsoft app is registered in `tenant` only (Azure's default).
    public func registerMicrosoftAppInOneTenant(_ tenant: String?) { state.withLockedValue { $0.singleTenant = tenant } }

    /// The custom parameters each sign-in at the handler carried.
    public var customParametersSeen: [[String: String]] { state.withLockedValue { $0.customParameters } }

    /// Every code, ID token and Firebase refresh token that passed through: canaries.
    public var issuedSecrets: [String] { state.withLockedValue { $0.issued } }

    /// `METHOD path` of every request, in order.
    public var requests: [String] { faults.requests.map { "\($0.method) \($0.path)" } }

    // MARK: - Answers

    func answer(method: String, path: String, query: [String: String], body: [UInt8]) -> Reply {
        switch (method, path) {
        case ("GET", "/sdk/firebase-app.js"): return Self.module(Self.appModule)
        case ("GET", "/sdk/firebase-auth.js"): return Self.module(Self.authModule)
        case ("GET", "/__/auth/handler"): return startAtProvider(query)
        case ("GET", "/auth/authorize"): return appleAuthorize(query)
        case ("POST", "/__/auth/handler"): return finishAtHandler(FormEncoding.decode(Substring(decoding: body, as: UTF8.self)))
        default: return .text(404, "not found")
        }
    }

    /// The providers the stand-in plays at the handler: Apple, and Microsoft, which Firebase
    /// takes only from the project's handler (firebase-js-sdk#5802).
    public static let hostedProviders: Set<String> = ["apple.com", "microsoft.com"]
    /// Microsoft's issuer for the stand-in's users' tenant, as a Microsoft ID token names it.
    public static let microsoftIssuer = "https://login.microsoftonline.com/\(FederatedStandIn.tenant)/v2.0"

    /// The handler opens the provider with itself as the return URL and the SHA-256 of a nonce it keeps.
    func startAtProvider(_ query: [String: String]) -> Reply {
        guard let providerID = query["providerId"], Self.hostedProviders.contains(providerID), let apiKey = query["apiKey"], !apiKey.isEmpty else {
            return Self.toOpener(["error": "auth/operation-not-allowed"])
        }
        let custom = (query["customParameters"].flatMap { try? JSONDecoder().decode([String: String].self, from: Data($0.utf8)) }) ?? [:]
        let (failure, singleTenant) = state.withLockedValue { state in
            state.customParameters.append(custom)
            defer { state.nextFailure = nil }
            return (state.nextFailure, state.singleTenant)
        }
        if let failure { return Self.toOpener(["error": failure.code, "message": failure.message]) }
        if providerID == "microsoft.com", let singleTenant, custom["tenant"] != singleTenant {
            // Microsoft shows AADSTS50194 in the popup and goes no further; the user closes it.
            return Self.toOpener(["error": "auth/popup-closed-by-user", "message": "Firebase: Error (auth/popup-closed-by-user)."])
        }
        let signInState = FederatedStandIn.random("st")
        let rawNonce = FederatedStandIn.random("n")
        state.withLockedValue { $0.pending[signInState] = (rawNonce, apiKey, providerID) }
        let scopes = (query["scopes"] ?? "").split(separator: ",").joined(separator: " ")
        let parameters = [
            ("response_type", "code id_token"), ("response_mode", "form_post"), ("client_id", servicesID),
            ("redirect_uri", "http://\(authDomain)/__/auth/handler"), ("scope", scopes), ("state", signInState),
            ("nonce", OIDCProvider.sha256Hex(rawNonce)),
        ]
        let location = "http://\(authDomain)/auth/authorize?" + FederatedStandIn.formEncoded(parameters)
        return FederatedStandIn.redirect(location)
    }

    struct AppleIDToken: Encodable {
        var iss: String
        var aud: String
        var exp: Int
        var iat: Int
        var sub: String
        var nonce: String?
        var c_hash: String
        var email: String
        var email_verified = "true"
        var auth_time: Int
        var nonce_supported = true
        /// Microsoft's: the user's tenant.
        var tid: String?
    }

    /// Apple's authorization page, approved at once as `nextUser`: a form posted to the return URL.
    func appleAuthorize(_ query: [String: String]) -> Reply {
        guard query["client_id"] == servicesID, query["response_mode"] == "form_post", let redirect = query["redirect_uri"] else {
            return .text(400, "invalid_request")
        }
        guard let user = state.withLockedValue({ $0.nextUser }) else {
            return Self.formPost(to: redirect, ["error": "user_cancelled_authorize", "state": query["state"] ?? ""])
        }
        let now = Int(saturating: Date().timeIntervalSince1970)
        let code = FederatedStandIn.random("c")
        let microsoft = state.withLockedValue { $0.pending[query["state"] ?? ""]?.providerID } == "microsoft.com"
        let idToken = key.sign(AppleIDToken(
            iss: microsoft ? Self.microsoftIssuer : Self.appleIssuer, aud: servicesID, exp: now + 600, iat: now, sub: user.id, nonce: query["nonce"],
            c_hash: FederatedStandIn.random(""), email: user.email, auth_time: now, tid: microsoft ? FederatedStandIn.tenant : nil))
        state.withLockedValue { $0.issued += [code, idToken] }
        return Self.formPost(to: redirect, [
            "code": code, "id_token": idToken, "state": query["state"] ?? "",
            "user": #"{"name":{"firstName":"Stand","lastName":"In"},"email":"\#(user.email)"}"#,
        ])
    }

    /// Apple's form post reaches the handler: `signInWithIdp` with the ID token and the raw
    /// nonce, and the session (or the error) to the page that opened the popup.
    func finishAtHandler(_ form: [String: String]) -> Reply {
        guard let signInState = form["state"], let pending = state.withLockedValue({ $0.pending.removeValue(forKey: signInState) }) else {
            return Self.toOpener(["error": "auth/missing-or-invalid-nonce"])
        }
        if form["error"] != nil { return Self.toOpener(["error": "auth/popup-closed-by-user"]) }
        guard let idToken = form["id_token"] else { return Self.toOpener(["error": "auth/invalid-credential"]) }
        let postBody = FederatedStandIn.formEncoded([("id_token", idToken), ("nonce", pending.rawNonce), ("providerId", pending.providerID)])
        let answer = exchange(pending.apiKey, "http://\(authDomain)/__/auth/handler", postBody)
        struct Session: Decodable {
            var refreshToken: String?
            var errorMessage: String?
            var error: ErrorBody?
            struct ErrorBody: Decodable { var message: String? }
        }
        let session = try? JSONDecoder().decode(Session.self, from: Data(answer.body))
        guard answer.status == 200, let refreshToken = session?.refreshToken else {
            let (code, message) = Self.sdkError(serverMessage: session?.errorMessage ?? session?.error?.message ?? "INTERNAL_ERROR")
            return Self.toOpener(["error": code, "message": message])
        }
        state.withLockedValue { $0.issued.append(refreshToken) }
        return Self.toOpener(["refreshToken": refreshToken])
    }

    /// The js-sdk's server codes with a client code of their own (`api/errors.ts`), of those
    /// the handler's `signInWithIdp` can meet.
    static let serverErrorMap = [
        "INVALID_IDP_RESPONSE": "invalid-credential", "USER_DISABLED": "user-disabled", "ADMIN_ONLY_OPERATION": "admin-restricted-operation",
        "TOO_MANY_ATTEMPTS_TRY_LATER": "too-many-requests", "TENANT_ID_MISMATCH": "tenant-id-mismatch", "OPERATION_NOT_ALLOWED": "operation-not-allowed",
    ]

    /// A server refusal as the SDK reports it: `(code, message)` (js-sdk `api/index.ts`: split at
    /// " : ", mapped, else lower-cased with runs of `_` and white space as `-`).
    static func sdkError(serverMessage: String) -> (String, String) {
        let parts = serverMessage.components(separatedBy: " : ")
        let server = parts[0]
        let code = "auth/" + (serverErrorMap[server] ?? server.lowercased().replacing(/[_\s]+/, with: "-"))
        let detail = parts.count > 1 ? parts.dropFirst().joined(separator: " : ") : "Error"
        return (code, "Firebase: \(detail) (\(code)).")
    }

    // MARK: - Pages

    static func module(_ source: String) -> Reply {
        Reply(status: 200, contentType: "text/javascript; charset=utf-8", extraHeaders: ["Access-Control-Allow-Origin": "*"], body: Array(source.utf8))
    }

    static func html(_ source: String) -> Reply {
        .text(200, "<!DOCTYPE html><html><head><meta charset=\"utf-8\"></head><body>" + source + "</body></html>", contentType: "text/html; charset=utf-8")
    }

    /// The popup's last page: a message to the SDK in the opener, then the popup closes.
    static func toOpener(_ message: [String: String]) -> Reply {
        var fields = ["standIn": "firebase-auth"]
        fields.merge(message) { $1 }
        let json = String(decoding: FakeJSON.encode(fields), as: UTF8.self).replacing("<", with: "\\u003c")
        return html("<script>window.opener.postMessage(\(json), \"*\"); window.close();</script>")
    }

    /// A page whose form posts `fields` to `action` at once (`response_mode=form_post`).
    static func formPost(to action: String, _ fields: [String: String]) -> Reply {
        func attribute(_ text: String) -> String {
            text.replacing("&", with: "&amp;").replacing("\"", with: "&quot;").replacing("<", with: "&lt;")
        }
        let inputs = fields.sorted { $0.key < $1.key }.map { "<input type=\"hidden\" name=\"\(attribute($0.key))\" value=\"\(attribute($0.value))\">" }.joined()
        return html("<form method=\"post\" action=\"\(attribute(action))\">\(inputs)</form><script>document.forms[0].submit();</script>")
    }

    static let appModule = """
        export function initializeApp(options) { return { options }; }
        """

    static let authModule = """
        export const inMemoryPersistence = { type: "NONE" };
        export const browserPopupRedirectResolver = {};
        export function initializeAuth(app, deps) { return { app, deps, emulator: null }; }
        export function connectAuthEmulator(auth, url) { auth.emulator = url; }
        export class OAuthProvider {
          constructor(providerId) { this.providerId = providerId; this.scopes = []; this.customParameters = {}; }
          addScope(scope) { this.scopes.push(scope); return this; }
          setCustomParameters(parameters) { this.customParameters = parameters; return this; }
        }
        export function signInWithPopup(auth, provider) {
          const options = auth.app.options;
          const handler = "http://" + options.authDomain + "/__/auth/handler?apiKey=" + encodeURIComponent(options.apiKey)
            + "&providerId=" + encodeURIComponent(provider.providerId) + "&scopes=" + encodeURIComponent(provider.scopes.join(","))
            + "&customParameters=" + encodeURIComponent(JSON.stringify(provider.customParameters));
          return new Promise((resolve, reject) => {
            const popup = window.open(handler, "firebaseAuthPopup", "width=500,height=600");
            if (!popup) { reject({ code: "auth/popup-blocked" }); return; }
            window.addEventListener("message", function listener(event) {
              if (!event.data || event.data.standIn !== "firebase-auth") return;
              window.removeEventListener("message", listener);
              if (event.data.refreshToken) resolve({ user: { refreshToken: event.data.refreshToken } });
              else reject({ code: event.data.error || "auth/internal-error", message: event.data.message || "Firebase: Error (" + (event.data.error || "auth/internal-error") + ")." });
            });
          });
        }
        """
}
