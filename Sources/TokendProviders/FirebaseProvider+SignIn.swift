import TokendCore

/// Firebase sign-in flows: email and password (sign-in or sign-up), anonymous, custom token,
/// and an identity provider's ID token exchanged at `signInWithIdp` (Google).
extension FirebaseProvider {
    private struct PasswordBody: Encodable {
        var email: String
        var password: String
        var returnSecureToken = true
    }

    private struct AnonymousBody: Encodable {
        var returnSecureToken = true
    }

    private struct CustomTokenBody: Encodable {
        var token: String
        var returnSecureToken = true
    }

    public func login(_ request: LoginRequest) -> AsyncThrowingStream<LoginStep, any Error> {
        AsyncThrowingStream { continuation in
            let task = Task {
                let outcome: Result<SignedIn, LoginFailure>
                if request.method == .google {
                    outcome = await signInWithGoogle(request) { continuation.yield($0) }
                } else {
                    outcome = await signIn(request)
                }
                switch outcome {
                case .success(let signedIn):
                    continuation.yield(.done(signedIn))
                    continuation.finish()
                case .failure(let failure):
                    continuation.finish(throwing: failure)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// Scopes a Google sign-in asks for: an ID token with the user's email is all Firebase needs.
    static let googleScopes = ["openid", "email", "profile"]

    /// Google's browser sign-in (its steps relayed), then its ID token exchanged at
    /// `signInWithIdp` — linked to `request.linkingIDToken`'s user when upgrading.
    func signInWithGoogle(_ request: LoginRequest, relay: (LoginStep) -> Void) async -> Result<SignedIn, LoginFailure> {
        guard let googleSignIn else {
            return .failure(LoginFailure(
                .misconfigured, code: "google_not_configured",
                message: "Google sign-in needs google_client_id (and, for an installed-app client, google_client_secret) in the account's configuration, and a tokend with OpenID Connect sign-in"))
        }
        let google = LoginRequest(method: .browser, scopes: Self.googleScopes, timeout: request.timeout)
        var googleIDToken: String?
        do {
            for try await step in googleSignIn.login(google) {
                if case .done(let signedIn) = step {
                    googleIDToken = signedIn.tokens.idToken
                    break
                }
                relay(step)
            }
        } catch let failure as LoginFailure {
            return .failure(failure)
        } catch {
            return .failure(LoginFailure(.transient, code: "failed", message: "the Google sign-in failed; try again"))
        }
        guard let googleIDToken else {
            return .failure(LoginFailure(.denied, code: "no_id_token", message: "Google's sign-in returned no ID token; check that google_client_id is a Google OAuth client and try again"))
        }
        return await signInWithIdp(providerIDToken: googleIDToken, providerID: "google.com", linkingTo: request.linkingIDToken)
    }

    func signIn(_ request: LoginRequest) async -> Result<SignedIn, LoginFailure> {
        switch request.method {
        case .email:
            guard let email = request.email, let password = request.secret else {
                return .failure(LoginFailure(.badRequest, code: "bad_request", message: "an email sign-in needs an email address and a password"))
            }
            let call: FirebaseCall = request.create ? .passwordSignUp : .passwordSignIn
            return await identityToolkit(call, PasswordBody(email: email, password: password), secrets: [password])
                .flatMap { Self.signedIn($0, provider: "password", call: call) }
        case .anonymous:
            return await identityToolkit(.anonymousSignUp, AnonymousBody(), secrets: [])
                .flatMap { Self.signedIn($0, provider: "anonymous", call: .anonymousSignUp) }
        case .customToken:
            guard let token = request.secret else {
                return .failure(LoginFailure(.badRequest, code: "bad_request", message: "a custom-token sign-in needs the token on stdin"))
            }
            return await identityToolkit(.customToken, CustomTokenBody(token: token), secrets: [token])
                .flatMap { Self.signedIn($0, provider: "custom", call: .customToken) }
        case .google:
            return await signInWithGoogle(request) { _ in }
        default:
            return .failure(LoginFailure(
                .badRequest, code: "unsupported_method",
                message: "Firebase accounts sign in with --email ADDRESS, --anonymous, --custom-token or --google"))
        }
    }
}
