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
                switch await signIn(request) {
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

    func signIn(_ request: LoginRequest) async -> Result<SignedIn, LoginFailure> {
        switch request.method {
        case .email:
            guard let email = request.email, let password = request.secret else {
                return .failure(LoginFailure(.badRequest, code: "bad_request", message: "an email sign-in needs an email address and a password"))
            }
            let method = request.create ? "signUp" : "signInWithPassword"
            return await identityToolkit(method, PasswordBody(email: email, password: password), secrets: [password])
                .flatMap { Self.signedIn($0, provider: "password") }
        case .anonymous:
            return await identityToolkit("signUp", AnonymousBody(), secrets: [])
                .flatMap { Self.signedIn($0, provider: "anonymous") }
        case .customToken:
            guard let token = request.secret else {
                return .failure(LoginFailure(.badRequest, code: "bad_request", message: "a custom-token sign-in needs the token on stdin"))
            }
            return await identityToolkit("signInWithCustomToken", CustomTokenBody(token: token), secrets: [token])
                .flatMap { Self.signedIn($0, provider: "custom") }
        case .google:
            return .failure(LoginFailure(
                .misconfigured, code: "unsupported_method",
                message: "Google sign-in needs google_client_id in the account's configuration"))
        case .browser, .device:
            return .failure(LoginFailure(
                .badRequest, code: "unsupported_method",
                message: "Firebase accounts sign in with --email ADDRESS, --anonymous, --custom-token or --google"))
        }
    }
}
