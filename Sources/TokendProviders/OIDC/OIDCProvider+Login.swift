import Crypto
import JWTKit
import TokendCore

extension OIDCProvider {
    public func login(_ request: LoginRequest) -> AsyncThrowingStream<LoginStep, any Error> {
        AsyncThrowingStream { continuation in
            let task = Task {
                do {
                    let signedIn: SignedIn
                    switch request.method {
                    case .browser:
                        signedIn = try await browserLogin(request) { continuation.yield($0) }
                    case .device:
                        signedIn = try await deviceLogin(request) { continuation.yield($0) }
                    default:
                        throw LoginFailure(
                            .badRequest, code: "unsupported_method",
                            message: "OpenID Connect accounts sign in with the browser (default) or --device, not --\(request.method.rawValue)")
                    }
                    continuation.yield(.done(signedIn))
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// Authorization code with PKCE S256 and a loopback redirect (RFC 7636, RFC 8252 §7.3).
    func browserLogin(_ request: LoginRequest, progress: (LoginStep) -> Void) async throws -> SignedIn {
        guard let authorizationEndpoint = try await requiredEndpoint({ $0.authorization }, "authorization_endpoint") else {
            throw LoginFailure(.misconfigured, code: "no_authorization_endpoint", message: "the provider names no authorization_endpoint; set one in the account")
        }
        let verifier = Self.randomToken()
        let state = Self.randomToken()
        // Firebase checks a federated ID token's nonce as the SHA-256 of the raw one it is given
        // (firebase-js-sdk `OAuthCredentialOptions.rawNonce`), so the provider gets the hash.
        let nonce = request.federation.map { Self.sha256Hex($0.rawNonce) } ?? Self.randomToken()
        let challenge = JWTClaims.base64URLEncode(Data(SHA256.hash(data: Data(verifier.utf8))))
        let scopes = request.scopes ?? settings.scopes
        let listener = try await LoopbackRedirectListener.start(state: state)
        let query = FormEncoding.encode([
            ("response_type", "code"), ("client_id", settings.clientID), ("redirect_uri", listener.redirectURI),
            ("scope", scopes.joined(separator: " ")), ("state", state), ("nonce", nonce),
            ("code_challenge", challenge), ("code_challenge_method", "S256"),
        ])
        let separator = authorizationEndpoint.contains("?") ? "&" : "?"
        progress(.openURL(authorizationEndpoint + separator + String(decoding: query, as: UTF8.self)))
        // A provider that refuses the redirect URI says so only in the browser, and never
        // redirects: the line names what to register (README.md, "Signing in").
        progress(.waiting("waiting for the sign-in in the browser (the provider must allow the redirect URI http://127.0.0.1\(LoopbackRedirectListener.callbackPath), any port)"))
        let redirect = try await listener.firstRedirect(within: request.timeout, on: transport)
        if let error = redirect.error {
            throw LoginFailure(.denied, code: error, message: "the provider did not sign you in (\(error)\(redirect.errorDescription.map { ": \($0)" } ?? ""))")
        }
        guard let code = redirect.code else {
            throw LoginFailure(.denied, code: "no_code", message: "the provider's redirect carried no authorization code")
        }
        return try await redeem(
            [("grant_type", "authorization_code"), ("code", code), ("redirect_uri", listener.redirectURI), ("code_verifier", verifier)],
            nonce: nonce, requestedScopes: scopes, keepsSession: request.federation == nil)
    }

    /// The device authorization grant (RFC 8628), with Google's variants: `verification_url`,
    /// HTTP 428 for "pending", and 403 with `slow_down` or `access_denied` in its body. A bare 403
    /// (a proxy, a firewall) ends the login: polling on would never succeed.
    func deviceLogin(_ request: LoginRequest, progress: (LoginStep) -> Void) async throws -> SignedIn {
        guard let deviceEndpoint = try await requiredEndpoint({ $0.deviceAuthorization }, "device_authorization_endpoint") else {
            throw LoginFailure(
                .misconfigured, code: "no_device_authorization_endpoint",
                message: "the provider names no device_authorization_endpoint; use the browser login or set one in the account")
        }
        let scopes = request.scopes ?? settings.scopes
        let answer: HTTPAnswer
        switch await transport.send(authenticated(deviceEndpoint, [("scope", scopes.joined(separator: " "))])) {
        case .failure(let failure): throw LoginFailure(.transient, code: failure.refreshFailure.code, message: failure.message)
        case .success(let got): answer = got
        }
        guard answer.status == 200, let grant = try? JSONDecoder().decode(DeviceGrant.self, from: Data(answer.body)),
            let verificationURI = grant.verification_uri ?? grant.verification_url
        else {
            let code = (try? JSONDecoder().decode(OAuthErrorBody.self, from: Data(answer.body)))?.error ?? "http_\(answer.status)"
            throw LoginFailure(
                RefreshClassifier.isTransientStatus(answer.status) ? .transient : .misconfigured, code: code,
                message: "the device authorization endpoint refused the request (\(code))")
        }
        // Numbers from the provider are bounded before anything converts them (docs/security.md).
        let codeLife = try DeviceGrant.bounded(grant.expires_in, "expires_in", plausible: DeviceGrant.plausibleCodeLife, to: 1...DeviceGrant.longestCodeLife)
        var interval = try DeviceGrant.bounded(grant.interval, "interval", plausible: DeviceGrant.plausibleInterval, to: DeviceGrant.pollIntervals) ?? 5
        progress(.userCode(
            verificationURI: verificationURI, verificationURIComplete: grant.verification_uri_complete, userCode: grant.user_code,
            expiresIn: codeLife))
        progress(.waiting("waiting for the code to be entered at \(verificationURI)"))
        // RFC 8628 §3.5: poll at `interval` (default 5 s); each slow_down adds 5 s for good.
        let lifetime = min(request.timeout, codeLife ?? request.timeout)
        let deadline = transport.clock.now().addingTimeInterval(lifetime)
        guard let tokenEndpoint = try await requiredEndpoint({ $0.token }, "token_endpoint") else {
            throw LoginFailure(.misconfigured, code: "no_token_endpoint", message: "the provider names no token_endpoint; set one in the account")
        }
        let fields = [("grant_type", "urn:ietf:params:oauth:grant-type:device_code"), ("device_code", grant.device_code)]
        while true {
            guard await transport.timers.sleep(until: transport.clock.now().addingTimeInterval(interval)) else { throw CancellationError() }
            guard transport.clock.now() < deadline else {
                throw LoginFailure(.timedOut, code: "timeout", message: "the code was not entered within \(Int(saturating: lifetime)) s; run tokenctl login --device again")
            }
            let poll: HTTPAnswer
            switch await transport.send(authenticated(tokenEndpoint, fields)) {
            case .failure: continue  // the network hiccuped: the next poll asks again
            case .success(let got): poll = got
            }
            let code = (try? JSONDecoder().decode(OAuthErrorBody.self, from: Data(poll.body)))?.error
            // GitHub answers "pending" (every device-flow error) with HTTP 200 and an `error`.
            if poll.status == 200, code == nil {
                return try await signedIn(from: poll, nonce: nil, requestedScopes: scopes, keepsSession: request.federation == nil)
            }
            switch (poll.status, code) {
            case (_, "authorization_pending"), (428, nil): continue
            case (_, "slow_down"): interval = min(interval + 5, DeviceGrant.pollIntervals.upperBound)
            case (_, "access_denied"):
                throw LoginFailure(.denied, code: "access_denied", message: "the sign-in was declined at the provider")
            case (_, "expired_token"):
                throw LoginFailure(.denied, code: "expired_token", message: "the code expired before it was entered; run tokenctl login --device again")
            case (let status, _) where RefreshClassifier.isTransientStatus(status): continue
            case (let status, let code):
                throw LoginFailure(.misconfigured, code: code ?? "http_\(status)", message: "the token endpoint refused the device code (\(code ?? "HTTP \(status)"))")
            }
        }
    }

    /// Trades a grant at the token endpoint for a session; checks the ID token when one came.
    func redeem(_ fields: [(String, String)], nonce: String?, requestedScopes: [String], keepsSession: Bool) async throws -> SignedIn {
        guard let tokenEndpoint = try await requiredEndpoint({ $0.token }, "token_endpoint") else {
            throw LoginFailure(.misconfigured, code: "no_token_endpoint", message: "the provider names no token_endpoint; set one in the account")
        }
        switch await transport.send(authenticated(tokenEndpoint, fields)) {
        case .failure(let failure): throw LoginFailure(.transient, code: failure.refreshFailure.code, message: failure.message)
        case .success(let answer): return try await signedIn(from: answer, nonce: nonce, requestedScopes: requestedScopes, keepsSession: keepsSession)
        }
    }

    /// A token endpoint's answer to a grant, as a session; one tokend keeps must come with a
    /// refresh token, one that only proves the user to Firebase need not.
    func signedIn(from answer: HTTPAnswer, nonce: String?, requestedScopes: [String], keepsSession: Bool) async throws -> SignedIn {
        let issued: IssuedTokens
        switch Self.descriptor.classify(answer) {
        case .refreshed(let tokens): issued = tokens
        case .needsLogin(let failure): throw LoginFailure(.denied, code: failure.code, message: failure.message)
        case .misconfigured(let failure): throw LoginFailure(.misconfigured, code: failure.code, message: failure.message)
        case .transient(let failure, _): throw LoginFailure(.transient, code: failure.code, message: failure.message)
        }
        guard issued.refreshToken != nil || !keepsSession else {
            throw LoginFailure(
                .misconfigured, code: "no_refresh_token",
                message: "the provider issued no refresh token, so tokend cannot keep the session (many providers want the offline_access scope)")
        }
        if let idToken = issued.idToken {
            do {
                try await verifyIDToken(idToken, nonce: nonce, answer: answer)
            } catch {
                // A session we refuse must not stay live at the provider: revoke what it issued.
                if let refreshToken = issued.refreshToken { _ = await revoke(refreshToken: refreshToken) }
                throw error
            }
        }
        return SignedIn(tokens: issued, grantedScopes: issued.scopes ?? requestedScopes, signInProvider: "oidc", requestedScopes: requestedScopes)
    }

    /// The ID token's signature against the provider's JWKS, then its claims (OpenID Connect
    /// Core §3.1.3.7). `answer` is the token endpoint's answer that carried it: its `Date`
    /// header says whether this machine's clock, not the token, is what is off.
    func verifyIDToken(_ token: String, nonce: String?, answer: HTTPAnswer? = nil) async throws {
        guard let jwksURL = try await requiredEndpoint({ $0.jwks }, "jwks_uri") else {
            throw LoginFailure(.misconfigured, code: "no_jwks_uri", message: "the provider names no jwks_uri, so its ID token cannot be checked")
        }
        let jwks: HTTPAnswer
        switch await transport.send(.get(jwksURL)) {
        case .failure(let failure): throw LoginFailure(.transient, code: failure.refreshFailure.code, message: "fetching the provider's keys: \(failure.message)")
        case .success(let got): jwks = got
        }
        try await IDTokenCheck.verifySignature(token, jwks: jwks.body)
        let now = transport.clock.now()
        let providerTime = (answer?.headers["date"] ?? jwks.headers["date"]).flatMap(HTTPDate.parse)
        // Discovery's issuer when it was read (the key set came from it), else the configured one.
        let issuer = await discovery.cached?.issuer ?? settings.issuer
        try IDTokenCheck(issuer: issuer, clientID: settings.clientID, nonce: nonce, now: now, providerTime: providerTime).check(token)
    }

    /// An endpoint for a login: configuration, else discovery; discovery trouble is a failure.
    func requiredEndpoint(_ pick: @Sendable (Endpoints) -> String?, _ name: String) async throws -> String? {
        switch await endpoint(pick, named: name) {
        case .success(let url): return url
        case .failure(let failure):
            throw LoginFailure(failure.code == "discovery_failed" ? .transient : .misconfigured, code: failure.code, message: failure.message)
        }
    }

    /// Lowercase hex of SHA-256, as Firebase's Apple and OpenID Connect guides hash a nonce (the
    /// fakes check and send nonces with it too).
    public static func sha256Hex(_ text: String) -> String {
        SHA256.hash(data: Data(text.utf8)).map { byte in
            let hex = String(byte, radix: 16)
            return hex.count == 1 ? "0" + hex : hex
        }.joined()
    }

    /// 32 random bytes, base64url: the PKCE verifier (RFC 7636 §4.1 asks for 43–128 characters),
    /// `state` and `nonce`; the fakes' refresh tokens and `jti`s. `SystemRandomNumberGenerator`
    /// reads the kernel's CSPRNG.
    public static func randomToken() -> String {
        var generator = SystemRandomNumberGenerator()
        return JWTClaims.base64URLEncode(Data((0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }))
    }
}

extension HTTPTransport {
    /// The stream's first element, or `timedOut` after `seconds`.
    func first<Element: Sendable>(of stream: AsyncStream<Element>, within seconds: Double) async throws -> Element {
        let (clock, timers) = (self.clock, self.timers)
        return try await withThrowingTaskGroup(of: Element?.self) { group in
            group.addTask {
                for await element in stream { return element }
                return nil
            }
            group.addTask {
                _ = await timers.sleep(until: clock.now().addingTimeInterval(seconds))
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let element = first else {
                try Task.checkCancellation()
                throw LoginFailure(.timedOut, code: "timeout", message: "the sign-in was not finished within \(Int(saturating: seconds)) s; run tokenctl login again")
            }
            return element
        }
    }
}

/// RFC 8628 §3.2, with Google's `verification_url`; numbers may come as strings.
struct DeviceGrant: Decodable {
    var device_code: String
    var user_code: String
    var verification_uri: String?
    var verification_url: String?
    var verification_uri_complete: String?
    var expires_in: FlexibleNumber?
    var interval: FlexibleNumber?

    /// Device codes live 5–30 minutes at the providers people use (Google 30, Microsoft 15, Okta
    /// 10); a longer promise only means tokend stops polling earlier.
    static let longestCodeLife: Double = 1800
    /// RFC 8628 §3.5 defaults to 5 s; more than a minute between polls makes a login feel dead,
    /// less than a second hammers the provider.
    static let pollIntervals: ClosedRange<Double> = 1...60
    /// Beyond these a number is not a provider's choice but nonsense (a day; an hour).
    static let plausibleCodeLife: ClosedRange<Double> = 0...86_400
    static let plausibleInterval: ClosedRange<Double> = 0...3600

    /// A plausible `number` clamped into `bounds`, nil when absent; NaN, infinity, a negative or
    /// an absurd value is a failure of the login (exit 75), never a trap.
    static func bounded(
        _ number: FlexibleNumber?, _ field: String, plausible: ClosedRange<Double>, to bounds: ClosedRange<Double>
    ) throws(LoginFailure) -> Double? {
        guard let number else { return nil }
        guard let value = number.seconds, value.isFinite, plausible.contains(value) else {
            throw LoginFailure(
                .transient, code: "invalid_device_grant",
                message: "the device authorization endpoint answered an unusable \(field); try again later, or sign in with the browser")
        }
        return min(max(value, bounds.lowerBound), bounds.upperBound)
    }
}

private struct OAuthErrorBody: Decodable {
    var error: String
}
