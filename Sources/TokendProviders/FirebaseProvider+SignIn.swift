import TokendCore

/// Firebase sign-in flows: email and password (sign-in or sign-up), anonymous, custom token,
/// and an identity provider's sign-in exchanged at `signInWithIdp` (Google, Microsoft, GitHub, …).
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
                if request.method == .idp {
                    outcome = await signInWithIdentityProvider(request) { continuation.yield($0) }
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

    /// The identity provider's own sign-in (its steps relayed), then what it returned exchanged
    /// at `signInWithIdp` — linked to `request.linkingIDToken`'s user when upgrading.
    func signInWithIdentityProvider(_ request: LoginRequest, relay: (LoginStep) -> Void) async -> Result<SignedIn, LoginFailure> {
        guard let id = request.identityProvider else {
            return .failure(LoginFailure(.badRequest, code: "bad_request", message: "a sign-in with an identity provider needs its id (--idp ID)"))
        }
        let name = IdentityProvider.displayName(id)
        guard let identityProvider = identitySignIns[id] else {
            let configured = identitySignIns.keys.sorted()
            return .failure(LoginFailure(
                .misconfigured, code: "idp_not_configured",
                message: "the account has no [account.NAME.idp.\"\(id)\"] table with the OAuth client \(name) issued for the project\(id == "google.com" ? " (or google_client_id)" : ""); "
                    + "add one (README.md, \"Other identity providers\")\(configured.isEmpty ? "" : "; configured: " + configured.joined(separator: ", "))"))
        }
        let rawNonce = OIDCProvider.randomToken()
        var signIn = LoginRequest(method: request.identityProviderDevice ? .device : .browser, timeout: request.timeout)
        signIn.federation = LoginRequest.Federation(rawNonce: rawNonce)
        var issued: IssuedTokens?
        do {
            for try await step in identityProvider.signIn.login(signIn) {
                if case .done(let signedIn) = step {
                    issued = signedIn.tokens
                    break
                }
                relay(step)
            }
        } catch let failure as LoginFailure {
            return .failure(failure)
        } catch {
            return .failure(LoginFailure(.transient, code: "failed", message: "the \(name) sign-in failed; try again"))
        }
        let credential: IdentityProviderCredential
        switch identityProvider.credential {
        case .idToken:
            guard let idToken = issued?.idToken else {
                return .failure(LoginFailure(
                    .misconfigured, code: "no_id_token",
                    message: "\(name)'s sign-in returned no ID token; check the client_id and that scopes include openid, or set credential = \"access_token\""))
            }
            // The raw nonce goes along when the token carries one (the browser flow's).
            credential = .idToken(idToken, rawNonce: JWTClaims(token: idToken)?.nonce == nil ? nil : rawNonce)
        case .accessToken:
            guard let accessToken = issued?.accessToken else {
                return .failure(LoginFailure(.misconfigured, code: "no_access_token", message: "\(name)'s sign-in returned no access token; check the client_id"))
            }
            credential = .accessToken(accessToken)
        }
        return await signInWithIdp(credential, providerID: id, linkingTo: request.linkingIDToken)
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
        case .idp:
            return await signInWithIdentityProvider(request) { _ in }
        default:
            return .failure(LoginFailure(
                .badRequest, code: "unsupported_method",
                message: "Firebase accounts sign in with --email ADDRESS, --anonymous, --custom-token, --google or --idp ID"))
        }
    }
}
