import TokendCore

/// Firebase Authentication's Secure Token API (firebase-rest.md): production over HTTPS, or the
/// Auth emulator convention (plain HTTP, production host as the first path segment).
public struct FirebaseProvider: TokenProvider {
    public static let productionHost = "securetoken.googleapis.com"
    /// The variable the Firebase SDKs and CLI use to point at an emulator.
    public static let emulatorVariable = "FIREBASE_AUTH_EMULATOR_HOST"

    public let kind = ProviderKind.firebase
    let apiKey: String
    let emulatorHost: String?
    let transport: HTTPTransport
    /// Google's browser sign-in (an OpenID Connect provider for `https://accounts.google.com`
    /// with the account's `google_client_id`), whose ID token `login --google` exchanges at
    /// `signInWithIdp`. Nil when the account has no Google client configured.
    public var googleSignIn: (any TokenProvider)?

    public init(apiKey: String, emulatorHost: String?, transport: HTTPTransport) {
        self.apiKey = apiKey
        self.emulatorHost = emulatorHost
        self.transport = transport
    }

    /// The token endpoint.
    var tokenURL: String { endpoint(host: Self.productionHost, path: "/v1/token") }

    /// A Google API endpoint of the project: production over HTTPS, or the emulator with the
    /// production host as the first path segment. The API key sits in the query, as Google
    /// requires; it is a public project identifier, but it still never goes into a log line.
    func endpoint(host: String, path: String) -> String {
        var key: [UInt8] = []
        FormEncoding.escape(apiKey, into: &key)
        let query = path + "?key=" + String(decoding: key, as: UTF8.self)
        if let emulatorHost {
            let authority = emulatorHost.contains(":") ? emulatorHost : emulatorHost + ":9099"
            return "http://\(authority)/\(host)\(query)"
        }
        return "https://\(host)\(query)"
    }

    public func refresh(refreshToken: String) async -> RefreshOutcome {
        let body = FormEncoding.encode([("grant_type", "refresh_token"), ("refresh_token", refreshToken)])
        let headers = [("Content-Type", "application/x-www-form-urlencoded"), ("Accept", "application/json")]
        switch await transport.post(url: tokenURL, headers: headers, body: body) {
        case .failure(let failure):
            return .transient(failure, retryAfter: nil)
        case .success(let answer):
            return RefreshClassifier.firebase(status: answer.status, body: answer.body, retryAfter: answer.retryAfter)
                .redacting(refreshToken)
        }
    }
}

extension RefreshOutcome {
    /// Belt and braces: should a provider ever echo the refresh token in an error message, it
    /// must not travel on into logs and status output.
    func redacting(_ secret: String) -> RefreshOutcome {
        func clean(_ failure: RefreshFailure) -> RefreshFailure {
            guard !secret.isEmpty, failure.message.contains(secret) else { return failure }
            return RefreshFailure(code: failure.code, message: failure.message.replacing(secret, with: "[redacted]"))
        }
        switch self {
        case .refreshed: return self
        case .transient(let failure, let retryAfter): return .transient(clean(failure), retryAfter: retryAfter)
        case .needsLogin(let failure): return .needsLogin(clean(failure))
        case .misconfigured(let failure): return .misconfigured(clean(failure))
        }
    }
}
