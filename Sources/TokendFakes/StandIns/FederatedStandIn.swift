import Crypto
import Foundation
import NIOConcurrencyHelpers
import TokendCore
import TokendProviders
import TokendSystem

/// A stand-in for an identity provider that Firebase projects enable besides Google, on
/// 127.0.0.1, in its family's shape: the paths, answers and quirks tokend meets at the real one.
/// The user's browser is played by the test: it opens the authorization URL tokend printed, the
/// stand-in approves it as `nextUser` and redirects to tokend's loopback listener.
///
/// | family | behaviour | source |
/// | --- | --- | --- |
/// | Microsoft | discovery at `/common/v2.0/…` names the issuer `…/{tenantid}/v2.0`; ID tokens have the user's tenant in `iss` and `tid`, no `email_verified` | Microsoft identity platform: "OpenID Connect", "ID token claims reference" |
/// | Microsoft | discovery at `/TENANT/v2.0/…` names that tenant's issuer (an Identity Platform OIDC provider for one tenant) | same, "OpenID Connect", single-tenant applications |
/// | Microsoft | authorize, token and keys under `/common/oauth2/v2.0/` and `/common/discovery/v2.0/keys`; a refresh token only with `offline_access`; errors `{"error": …, "error_description": "AADSTS…"}` with 400 | same, "Authorization code flow" |
/// | GitHub | no discovery, no ID token; `/login/oauth/authorize`, `/login/oauth/access_token` (client secret in the body); JSON only with `Accept: application/json`, else form-encoded; comma-separated `scope`; no `expires_in` | GitHub Docs, "Authorizing OAuth apps" |
/// | GitHub | a refused code is HTTP 200 with `{"error": "bad_verification_code", …}` | GitHub Docs, "Troubleshooting OAuth app access token request errors" |
/// | GitHub | device flow: `/login/device/code`, then polls of the token endpoint answered 200 `authorization_pending` until the code is entered | GitHub Docs, "Authorizing OAuth apps", device flow |
/// | GitHub | opaque `gho_…` access tokens; `GET /user` with one says who it is (what Firebase asks) | GitHub Docs, "Get the authenticated user" |
/// | both | PKCE S256 checked; a code works once, for its redirect URI | RFC 7636 §4.6; RFC 6749 §4.1.3 |
///
/// ID tokens are signed ES256 (Microsoft signs RS256): tokend checks either against the key set.
public final class FederatedStandIn: FakeRoutes {
    public enum Family: Sendable {
        case microsoft
        case github
    }

    /// Who approves the next authorization.
    public struct User: Sendable, Equatable {
        /// Microsoft's `sub` (pairwise per app), GitHub's numeric user id.
        public var id: String
        public var email: String

        public init(id: String, email: String) {
            self.id = id
            self.email = email
        }
    }

    /// Microsoft's home tenant of the stand-in's users, as a real tenant id looks.
    public static let tenant = "3c4e9d0f-7a21-4b6e-9f0a-5d2c8e1b7a64"

    struct Pending: Sendable {
        var user: User
        var clientID: String
        var redirectURI: String
        var challenge: String?
        var nonce: String?
        var scopes: [String]
    }

    struct State: Sendable {
        var nextUser: User?
        var codes: [String: Pending] = [:]
        /// Device codes by device code: the user code, and who entered it (nil: not yet).
        var deviceCodes: [String: (userCode: String, scopes: [String], user: User?)] = [:]
        var accessTokens: [String: User] = [:]
        var issued: [String] = []
    }

    public let family: Family
    public let clientID: String
    public let clientSecret: String?
    let state = NIOLockedValueBox(State())
    let key = StandInKey()
    let http = StandInServer()
    /// Faults on any of its routes; by default, its token endpoint's.
    public let faults: FaultLayer

    init(family: Family, clientID: String, clientSecret: String?) {
        faults = FaultLayer(defaultTarget: family == .github ? "/login/oauth/access_token" : "/common/oauth2/v2.0/token")
        self.family = family
        self.clientID = clientID
        self.clientSecret = clientSecret
    }

    public static func start(_ family: Family, clientID: String, clientSecret: String? = nil) async throws -> FederatedStandIn {
        let standIn = FederatedStandIn(family: family, clientID: clientID, clientSecret: clientSecret)
        try await standIn.http.start(standIn)
        return standIn
    }

    func handle(_ request: IncomingRequest) -> Decision { Decision(action: .reply(answer(request))) }

    public func shutdown() async { await http.shutdown() }

    /// The providers' transport, answered by this stand-in in-process (no socket).
    public func transport(deadline: Double = HTTPTransport.defaultDeadline) -> HTTPTransport {
        FakeResponder(routes: self).transport(deadline: deadline, clock: SystemWallClock())
    }

    public var base: String { "http://127.0.0.1:\(http.port)" }

    /// Microsoft: what `issuer` is set to (the multi-tenant `common` endpoint). GitHub has none.
    public var issuer: String { base + "/common/v2.0" }
    /// The issuer Microsoft's ID tokens of `tenant` carry.
    public var tenantIssuer: String { base + "/\(Self.tenant)/v2.0" }
    public var authorizationEndpoint: String { base + (family == .github ? "/login/oauth/authorize" : "/common/oauth2/v2.0/authorize") }
    public var tokenEndpoint: String { base + (family == .github ? "/login/oauth/access_token" : "/common/oauth2/v2.0/token") }

    /// The next authorization is approved as `user`; without one it is refused (access_denied).
    public func approveNext(as user: User) { state.withLockedValue { $0.nextUser = user } }

    /// The user enters `userCode` at the verification page and approves as `user`; false for
    /// a code never issued.
    public func enterDeviceCode(_ userCode: String, as user: User) -> Bool {
        state.withLockedValue { state in
            guard let deviceCode = state.deviceCodes.first(where: { $0.value.userCode == userCode })?.key else { return false }
            state.deviceCodes[deviceCode]?.user = user
            return true
        }
    }

    /// GitHub's device authorization endpoint.
    public var deviceAuthorizationEndpoint: String { base + "/login/device/code" }

    /// Every token the stand-in issued (codes, access and ID tokens): canaries for the logs.
    public var issuedSecrets: [String] { state.withLockedValue { $0.issued } }

    /// `METHOD path` of every request, in order.
    public var requests: [String] { faults.requests.map { "\($0.method) \($0.path)" } }

    /// GitHub's `GET /user` as Firebase sees it: who an access token belongs to, as the claims
    /// the fake Firebase's `IdentityProvider.userInfo` returns; nil for a token never issued.
    public func userInfo(accessToken: String) -> [String: String]? {
        guard let user = state.withLockedValue({ $0.accessTokens[accessToken] }) else { return nil }
        return ["sub": user.id, "email": user.email, "email_verified": "true"]
    }

    // MARK: - Answers

    func answer(_ request: IncomingRequest) -> Reply {
        let (form, accept, authorization) = (request.form, request.headers["accept"], request.authorization)
        switch (family, request.method, request.path) {
        case (.microsoft, "GET", "/common/v2.0/.well-known/openid-configuration"):
            return .json(200, [
                "issuer": base + "/{tenantid}/v2.0", "authorization_endpoint": authorizationEndpoint, "token_endpoint": tokenEndpoint,
                "jwks_uri": base + "/common/discovery/v2.0/keys", "response_types_supported": "code id_token",
            ])
        case (.microsoft, "GET", "/\(Self.tenant)/v2.0/.well-known/openid-configuration"):
            // One tenant's endpoint: its issuer is the tenant's own, what an Identity Platform
            // OIDC provider for a single tenant is configured with.
            return .json(200, [
                "issuer": tenantIssuer, "authorization_endpoint": authorizationEndpoint, "token_endpoint": tokenEndpoint,
                "jwks_uri": base + "/common/discovery/v2.0/keys", "response_types_supported": "code id_token",
            ])
        case (.microsoft, "GET", "/common/discovery/v2.0/keys"):
            return .json(200, KeySet(keys: [key.jwk]))
        case (_, "GET", "/common/oauth2/v2.0/authorize"), (_, "GET", "/login/oauth/authorize"):
            return authorize(request.query)
        case (.microsoft, "POST", "/common/oauth2/v2.0/token"):
            return microsoftToken(form, authorization: authorization)
        case (.github, "POST", "/login/device/code"):
            guard form["client_id"] == clientID else { return .json(200, ["error": "incorrect_client_credentials"]) }
            let deviceCode = Self.random("dc")
            let userCode = String(Self.random("").prefix(4).uppercased()) + "-" + String(Self.random("").prefix(4).uppercased())
            state.withLockedValue {
                $0.deviceCodes[deviceCode] = (userCode, (form["scope"] ?? "").split(separator: " ").map(String.init), nil)
                $0.issued.append(deviceCode)
            }
            // GitHub's interval is 5 s; 1 keeps the tests short and is within what tokend accepts.
            return .json(200, DeviceAnswer(device_code: deviceCode, user_code: userCode, verification_uri: base + "/login/device", expires_in: 899, interval: 1))
        case (.github, "POST", "/login/oauth/access_token") where form["grant_type"] == "urn:ietf:params:oauth:grant-type:device_code":
            let entry = state.withLockedValue { $0.deviceCodes[form["device_code"] ?? ""] }
            guard let entry else { return .json(200, ["error": "expired_token", "error_description": "The device_code has expired."]) }
            guard let user = entry.user else { return .json(200, ["error": "authorization_pending", "error_description": "The authorization request is still pending."]) }
            state.withLockedValue { $0.deviceCodes[form["device_code"] ?? ""] = nil }
            return githubAccessToken(for: user, scopes: entry.scopes, json: accept?.contains("application/json") == true)
        case (.github, "POST", "/login/oauth/access_token"):
            return githubToken(form, json: accept?.contains("application/json") == true)
        case (.github, "GET", "/user"):
            let token = authorization.map { String($0.drop { $0 != " " }.dropFirst()) } ?? ""
            guard let info = userInfo(accessToken: token) else { return .json(401, ["message": "Bad credentials"]) }
            return .json(200, info)
        default:
            return .json(404, ["error": "not_found"])
        }
    }

    /// The authorization endpoint: approves as `nextUser` and redirects with a one-time code.
    func authorize(_ query: [String: String]) -> Reply {
        guard query["client_id"] == clientID, let redirect = query["redirect_uri"], redirect.hasPrefix("http://127.0.0.1:") else {
            return .text(400, "unknown client or redirect URI")
        }
        let separator = redirect.contains("?") ? "&" : "?"
        let stateParameter = query["state"].map { "&state=" + FormEncoding.escaped($0) } ?? ""
        guard let user = state.withLockedValue({ $0.nextUser }) else {
            return Self.redirect(redirect + separator + "error=access_denied" + stateParameter)
        }
        let code = Self.random(family == .github ? "" : "M.C5")
        let pending = Pending(
            user: user, clientID: clientID, redirectURI: redirect,
            challenge: query["code_challenge_method"] == "S256" ? query["code_challenge"] : nil, nonce: query["nonce"],
            scopes: (query["scope"] ?? "").split(separator: " ").map(String.init))
        state.withLockedValue {
            $0.codes[code] = pending
            $0.issued.append(code)
        }
        return Self.redirect(redirect + separator + "code=" + FormEncoding.escaped(code) + stateParameter)
    }

    /// Takes a code once, checking client, redirect URI and PKCE verifier.
    func redeem(_ form: [String: String]) -> Pending? {
        guard let code = form["code"], let pending = state.withLockedValue({ $0.codes.removeValue(forKey: code) }) else { return nil }
        guard form["redirect_uri"] == pending.redirectURI else { return nil }
        if let challenge = pending.challenge {
            let verifier = form["code_verifier"] ?? ""
            guard JWTClaims.base64URLEncode(Data(SHA256.hash(data: Data(verifier.utf8)))) == challenge else { return nil }
        }
        return pending
    }

    func microsoftToken(_ form: [String: String], authorization: String?) -> Reply {
        guard form["grant_type"] == "authorization_code" else {
            return .json(400, ["error": "unsupported_grant_type", "error_description": "AADSTS70003: The app requested an unsupported grant type."])
        }
        guard let pending = redeem(form) else {
            return .json(400, ["error": "invalid_grant", "error_description": "AADSTS70008: The provided authorization code or refresh token has expired or was already redeemed."])
        }
        let now = Int(saturating: Date().timeIntervalSince1970)
        let claims = MicrosoftIDToken(
            aud: pending.clientID, iss: tenantIssuer, iat: now, nbf: now, exp: now + 3600, email: pending.user.email,
            name: "Stand-in user", nonce: pending.nonce, oid: pending.user.id, preferred_username: pending.user.email,
            sub: pending.user.id, tid: Self.tenant)
        let idToken = key.sign(claims)
        let accessToken = Self.random("EwB")
        var answer: [String: String] = [
            "token_type": "Bearer", "scope": pending.scopes.filter { $0 != "openid" && $0 != "offline_access" }.joined(separator: " "),
            "access_token": accessToken, "id_token": idToken,
        ]
        if pending.scopes.contains("offline_access") { answer["refresh_token"] = Self.random("M.R3") }
        state.withLockedValue { $0.issued += [idToken, accessToken] + (answer["refresh_token"].map { [$0] } ?? []) }
        var reply = Reply.json(200, answer)
        // Microsoft sends expires_in as a number; the dictionary above holds strings only.
        reply.body = Array(String(decoding: reply.body, as: UTF8.self).dropLast().utf8) + Array(",\"expires_in\":3599}".utf8)
        return reply
    }

    func githubToken(_ form: [String: String], json: Bool) -> Reply {
        let refused: [String: String]?
        var pending: Pending?
        if form["client_id"] != clientID || (clientSecret != nil && form["client_secret"] != clientSecret) {
            refused = ["error": "incorrect_client_credentials", "error_description": "The client_id and/or client_secret passed are incorrect."]
        } else if let redeemed = redeem(form) {
            pending = redeemed
            refused = nil
        } else {
            refused = ["error": "bad_verification_code", "error_description": "The code passed is incorrect or expired."]
        }
        guard let pending else { return json ? .json(200, refused ?? [:]) : .text(200, Self.formEncoded(refused ?? [:]), contentType: "application/x-www-form-urlencoded") }
        return githubAccessToken(for: pending.user, scopes: pending.scopes, json: json)
    }

    func githubAccessToken(for user: User, scopes: [String], json: Bool) -> Reply {
        let accessToken = Self.random("gho_")
        state.withLockedValue {
            $0.accessTokens[accessToken] = user
            $0.issued.append(accessToken)
        }
        let answer = ["access_token": accessToken, "token_type": "bearer", "scope": scopes.joined(separator: ",")]
        return json ? .json(200, answer) : .text(200, Self.formEncoded(answer), contentType: "application/x-www-form-urlencoded")
    }

    // MARK: - Tokens

    struct MicrosoftIDToken: Encodable {
        var ver = "2.0"
        var aud: String
        var iss: String
        var iat: Int
        var nbf: Int
        var exp: Int
        var email: String
        var name: String
        var nonce: String?
        var oid: String
        var preferred_username: String
        var sub: String
        var tid: String
    }

    struct KeySet: Encodable { var keys: [StandInKey.JWK] }

    struct DeviceAnswer: Encodable {
        var device_code: String
        var user_code: String
        var verification_uri: String
        var expires_in: Int
        var interval: Int
    }

    static func random(_ prefix: String) -> String { prefix + FakeIdentifiers.uid(length: 32) }

    /// Fields in key order, form-encoded by the providers' encoder.
    static func formEncoded(_ fields: [(String, String)]) -> String { String(decoding: FormEncoding.encode(fields), as: UTF8.self) }

    static func formEncoded(_ fields: [String: String]) -> String { formEncoded(fields.sorted { $0.key < $1.key }) }

    static func redirect(_ location: String) -> Reply {
        Reply(status: 302, contentType: "text/plain; charset=UTF-8", extraHeaders: ["Location": location], body: Array("Redirecting".utf8))
    }
}

/// A stand-in provider's signing key: ES256 (P-256), published as a JWK.
struct StandInKey: Sendable {
    struct JWK: Encodable {
        var kty = "EC"
        var crv = "P-256"
        var use = "sig"
        var alg = "ES256"
        var kid: String
        var x: String
        var y: String
    }

    static let keyID = "stand-in-key-1"
    let key = P256.Signing.PrivateKey()

    var jwk: JWK {
        let raw = key.publicKey.rawRepresentation
        return JWK(kid: Self.keyID, x: JWTClaims.base64URLEncode(raw.prefix(32)), y: JWTClaims.base64URLEncode(raw.suffix(32)))
    }

    func sign(_ claims: some Encodable) -> String {
        let header = JWTClaims.base64URLEncode(Data(#"{"alg":"ES256","kid":"\#(Self.keyID)","typ":"JWT"}"#.utf8))
        let input = header + "." + JWTClaims.base64URLEncode(Data(FakeJSON.encode(claims)))
        let signature = (try? key.signature(for: Data(input.utf8)).rawRepresentation) ?? Data()
        return input + "." + JWTClaims.base64URLEncode(signature)
    }
}

/// A stand-in's HTTP server on 127.0.0.1, started once its owner exists (the answers need the
/// port): the one connection layer (`FakeResponder`), so its faults are every fake's.
final class StandInServer: Sendable {
    private let server = NIOLockedValueBox<FakeHTTPServer?>(nil)

    func start(_ routes: any FakeRoutes) async throws {
        let started = try await FakeHTTPServer.start(routes: routes)
        server.withLockedValue { $0 = started }
    }

    /// The port the kernel picked; 0 before `start`.
    var port: Int { server.withLockedValue { $0?.port ?? 0 } }

    func shutdown() async {
        let server = self.server.withLockedValue { $0 }
        try? await server?.shutdown()
    }
}
