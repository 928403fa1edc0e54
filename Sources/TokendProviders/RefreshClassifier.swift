import TokendCore

/// Turns a provider's HTTP answer to a refresh into a `RefreshOutcome`, by the refresh policy in
/// README.md ("How refreshing works"). Pure: the HTTP client hands it status, body and
/// `Retry-After`; transport failures (refused, timed out, dropped) are mapped by the provider.
public enum RefreshClassifier {
    /// Firebase codes after which only a new sign-in helps.
    public static let firebaseNeedsLogin: Set<String> = ["TOKEN_EXPIRED", "USER_DISABLED", "USER_NOT_FOUND", "INVALID_REFRESH_TOKEN"]
    /// Firebase codes that mean a rate limit or a spent quota, not a verdict: whatever call
    /// answers them, a later try can succeed (an account's refresh is never parked on them).
    public static let firebaseTransient: Set<String> = ["TOO_MANY_ATTEMPTS_TRY_LATER", "QUOTA_EXCEEDED", "RESET_PASSWORD_EXCEED_LIMIT"]
    /// Legacy `errors[].reason`s (answers without `ErrorInfo`) as the reason they stand for:
    /// firebase-ios-sdk `AuthBackend.swift` still reads `keyInvalid` and `ipRefererBlocked`;
    /// `accessNotConfigured` is a disabled API's (firebase/firebaseui-web#217).
    static let legacyReasons = ["keyInvalid": "API_KEY_INVALID", "ipRefererBlocked": "API_KEY_HTTP_REFERRER_BLOCKED", "accessNotConfigured": "SERVICE_DISABLED"]

    /// Google's `ErrorInfo.reason`s for a spent rate or resource quota (`error_reason.proto`):
    /// a later try can succeed, whatever the status.
    public static let googleTransientReasons: Set<String> = ["RATE_LIMIT_EXCEEDED", "RESOURCE_QUOTA_EXCEEDED"]
    /// What a refused key's answer tells the user: the refusal, Google's own words, the fix.
    /// Google's text is quoted whole up to `maximumQuote` characters, else its first sentence
    /// (`SERVICE_DISABLED`'s runs to ~330 with a console URL), so that the fix fits in
    /// `RefreshFailure.maximumMessageBytes`.
    static func apiKeyRefusalAdvice(_ refusal: RefreshFailure.KeyRefusal, said message: String) -> String {
        var quote = message
        if quote.count > maximumQuote, let end = quote.firstRange(of: ". ") {
            quote = String(quote[..<end.lowerBound]) + "."
        }
        if quote.count > maximumQuote { quote = String(quote.prefix(maximumQuote)) + "…" }
        return refusal.what + (quote.isEmpty ? "" : " (\(quote))") + "; " + refusal.fix
    }

    /// Google's refusal texts this long are quoted whole (the IP restriction's is ~150).
    static let maximumQuote = 200

    /// Whether `code` reads as a Firebase code (`TOKEN_EXPIRED`): the part of a message before
    /// its first ':' is one only then; an English sentence ("Requests from this Android client
    /// application <empty> are blocked.") never becomes a code.
    static func isCode(_ code: String) -> Bool {
        !code.isEmpty && code.count <= 100 && code.unicodeScalars.allSatisfy { ("A"..."Z").contains($0) || ("0"..."9").contains($0) || $0 == "_" }
    }

    /// OAuth codes (RFC 6749 §5.2) that say the server, not the session, has trouble.
    public static let oauthTransient: Set<String> = ["temporarily_unavailable", "server_error"]

    /// Ten years: far beyond any token lifetime a provider grants, far below what a date can hold.
    public static let maximumLifetime: Double = 10 * 365 * 86_400

    /// HTTP statuses that are worth retrying whatever the body says: 408, 429, 5xx.
    public static func isTransientStatus(_ status: Int) -> Bool {
        status == 408 || status == 429 || (500...599).contains(status)
    }

    /// A Secure Token API answer.
    public static func firebase(status: Int, body: [UInt8], retryAfter: Double?) -> RefreshOutcome {
        if status == 200 { return success(body: body, lifetimeIsString: true) }
        if let redirect = redirect(status: status) { return redirect }
        let envelope = try? JSONDecoder().decode(GoogleErrorEnvelope.self, from: Data(body))
        // Google's OAuth front ends answer in RFC 6749's shape (`"error":"invalid_grant"`), not in
        // the API envelope: read such an answer by OAuth's rules rather than as an unknown 400.
        if envelope == nil, (try? JSONDecoder().decode(OAuthError.self, from: Data(body))) != nil {
            return oauth(status: status, body: body, retryAfter: retryAfter)
        }
        let message = envelope?.error.message ?? ""
        // The code is `message` up to the first ':', trimmed ("TOKEN_EXPIRED : detail").
        // ErrorInfo reasons, then the legacy `errors[].reason`s older answers carry alone.
        let reasons = ((envelope?.error.details?.compactMap(\.reason) ?? []) + (envelope?.error.errors?.compactMap { $0.reason.flatMap { legacyReasons[$0] } } ?? []))
            .filter(isCode)
        let prefix = message.split(separator: ":", maxSplits: 1).first.map(\.trimmed) ?? ""
        // Not a code: Google's reason says what it is, else the status.
        let code = isCode(prefix) ? prefix : reasons.first ?? "http_\(status)"
        let failure = RefreshFailure(code: code, message: message.isEmpty ? "HTTP \(status)" : message)
        if isTransientStatus(status) || firebaseTransient.contains(code) || reasons.contains(where: googleTransientReasons.contains) {
            return .transient(failure, retryAfter: retryAfter)
        }
        if firebaseNeedsLogin.contains(code) { return .needsLogin(failure) }
        if reasons.contains("API_KEY_INVALID") || message.hasPrefix("API key not valid") {
            return .misconfigured(RefreshFailure(code: "API_KEY_INVALID", message: message))
        }
        if let reason = reasons.first(where: { RefreshFailure.apiKeyRefusals[$0] != nil }), let refusal = RefreshFailure.apiKeyRefusals[reason] {
            return .misconfigured(RefreshFailure(code: reason, message: apiKeyRefusalAdvice(refusal, said: message)))
        }
        // PROJECT_NUMBER_MISMATCH, INVALID_GRANT_TYPE, MISSING_REFRESH_TOKEN, a missing key (403) and
        // any 4xx we do not know: repeating the same request cannot help, and "log in again" would
        // be a lie, so the account's configuration is blamed.
        return .misconfigured(failure)
    }

    /// An OAuth 2.0 token endpoint answer (RFC 6749 §5.1, §5.2).
    /// `defaultLifetime` stands in for a missing `expires_in` when no token is a JWT with `exp`.
    public static func oauth(status: Int, body: [UInt8], retryAfter: Double?, defaultLifetime: Double? = nil) -> RefreshOutcome {
        let error = try? JSONDecoder().decode(OAuthError.self, from: Data(body))
        // GitHub answers a refused grant with HTTP 200 and `error` (its OAuth apps' "Troubleshooting
        // access token request errors"): such an answer is read as the refusal it is.
        if status == 200, error == nil || hasAccessToken(body) {
            return success(body: body, lifetimeIsString: false, defaultLifetime: defaultLifetime)
        }
        if let redirect = redirect(status: status) { return redirect }
        let code = error?.error ?? "http_\(status)"
        let failure = RefreshFailure(code: code, message: error?.errorDescription ?? "HTTP \(status)")
        if isTransientStatus(status) || oauthTransient.contains(code) { return .transient(failure, retryAfter: retryAfter) }
        if code == "invalid_grant" { return .needsLogin(failure) }
        // invalid_client, unauthorized_client, unsupported_grant_type, invalid_scope and any 4xx
        // we do not know: the same request cannot succeed, and a new login would not fix it.
        return .misconfigured(failure)
    }

    private static func hasAccessToken(_ body: [UInt8]) -> Bool {
        (try? JSONDecoder().decode(TokenAnswer.self, from: Data(body)))?.access_token != nil
    }

    /// Redirects are never followed (they would carry the refresh token elsewhere). One is not a
    /// verdict on the session either: retried with backoff, and the status says why.
    static func redirect(status: Int) -> RefreshOutcome? {
        guard (300...399).contains(status) else { return nil }
        return .transient(RefreshFailure(
            code: "redirect", message: "the token endpoint answered HTTP \(status) (a redirect, never followed): check the account's endpoint"), retryAfter: nil)
    }

    /// A 200 answer. Missing tokens or a body that is not JSON is a broken answer, not a verdict
    /// on the session: transient, so the held refresh token stays untouched.
    public static func success(body: [UInt8], lifetimeIsString: Bool, defaultLifetime: Double? = nil) -> RefreshOutcome {
        guard let answer = try? JSONDecoder().decode(TokenAnswer.self, from: Data(body)) else {
            return .transient(RefreshFailure(code: "malformed_response", message: "the provider answered 200 with a body that is not a token response"), retryAfter: nil)
        }
        let idToken = answer.id_token ?? (lifetimeIsString ? answer.access_token : nil)
        let accessToken = answer.access_token ?? (lifetimeIsString ? answer.id_token : nil)
        // An empty refresh token is no rotation but a broken answer: persisting it would lose the
        // session for good, so the held one stays.
        if answer.refresh_token?.isEmpty == true {
            return .transient(RefreshFailure(code: "malformed_response", message: "the provider answered 200 with an empty refresh_token"), retryAfter: nil)
        }
        guard idToken != nil || accessToken != nil else {
            return .transient(RefreshFailure(code: "malformed_response", message: "the provider answered 200 without a token"), retryAfter: nil)
        }
        // A lifetime outside (0, ten years] is a broken answer, not a token to keep for ever.
        var lifetime = answer.expires_in?.seconds.flatMap { $0 > 0 && $0 <= maximumLifetime ? $0 : nil }
        if answer.expires_in == nil, lifetime == nil, let defaultLifetime,
            ![idToken, accessToken].contains(where: { $0.flatMap { JWTClaims(token: $0)?.expiresAt } != nil }) {
            lifetime = defaultLifetime
        }
        guard lifetime != nil || [idToken, accessToken].contains(where: { $0.flatMap { JWTClaims(token: $0)?.expiresAt } != nil }) else {
            return .transient(RefreshFailure(code: "malformed_response", message: "the provider answered 200 without expires_in"), retryAfter: nil)
        }
        return .refreshed(IssuedTokens(
            refreshToken: answer.refresh_token, idToken: idToken, accessToken: accessToken, expiresIn: lifetime,
            scopes: answer.scope.map { $0.split(separator: " ").map(String.init) }))
    }

    /// `Retry-After` as delta-seconds (RFC 9110 §10.2.3). The HTTP-date form is ignored: no
    /// provider we know sends it on the token endpoint, and backoff still applies without it.
    public static func retryAfter(_ header: String?) -> Double? {
        guard let header, let seconds = Double(header.trimmed), seconds >= 0 else { return nil }
        return seconds
    }

    // snake_case field names mirror the wire, so no CodingKeys can drift from it.
    private struct TokenAnswer: Decodable {
        var id_token: String?
        var access_token: String?
        var refresh_token: String?
        var expires_in: FlexibleNumber?
        var scope: String?
    }

    private struct GoogleErrorEnvelope: Decodable {
        struct Body: Decodable {
            var code: Int?
            var message: String?
            var status: String?
            var details: [Detail]?
            var errors: [Detail]?
        }
        struct Detail: Decodable { var reason: String? }
        var error: Body
    }

    private struct OAuthError: Decodable {
        var error: String
        var errorDescription: String?
        enum CodingKeys: String, CodingKey {
            case error
            case errorDescription = "error_description"
        }
    }
}
