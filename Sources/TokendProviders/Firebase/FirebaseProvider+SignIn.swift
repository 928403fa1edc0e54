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
                var outcome: Result<SignedIn, LoginFailure>
                if request.method == .idp {
                    outcome = await signInWithIdentityProvider(request) { continuation.yield($0) }
                } else {
                    outcome = await signIn(request)
                }
                if case .failure(let failure) = outcome, let pending = failure.pendingSecondFactor {
                    outcome = .failure(challenge(pending, request: request) { continuation.yield($0) })
                }
                if case .success(let signedIn) = outcome, let problem = tenantProblem(idToken: signedIn.tokens.idToken) {
                    outcome = .failure(LoginFailure(.misconfigured, code: problem.code, message: problem.message))
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
                message: "the account has no [account.NAME.idp.\"\(id)\"] table\(Self.missingTableHint(id)); add one (README.md, \"Other identity providers\")"
                    + (configured.isEmpty ? "" : "; configured: " + configured.joined(separator: ", "))))
        }
        let signInAt: any TokenProvider, credentialKind: IdentityProvider.Credential
        switch identityProvider {
        case .hosted(let hosted):
            return await signInThroughHostedPage(hosted, id: id, request: request, relay: relay)
        case .oauth(let provider, let credential):
            (signInAt, credentialKind) = (provider, credential)
        }
        let rawNonce = OIDCProvider.randomToken()
        var signIn = LoginRequest(method: request.identityProviderDevice ? .device : .browser, timeout: request.timeout)
        signIn.federation = LoginRequest.Federation(rawNonce: rawNonce)
        var issued: IssuedTokens?
        do {
            for try await step in signInAt.login(signIn) {
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
        switch credentialKind {
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

    /// What a missing `idp` table must hold.
    static func missingTableHint(_ id: String) -> String {
        switch id {
        case "google.com": " with the OAuth client Google issued for the project (or google_client_id)"
        case "microsoft.com": " with auth_domain = \"PROJECT.firebaseapp.com\": Firebase takes Microsoft sign-ins only from the project's Firebase-hosted handler (README.md, \"Microsoft\")"
        case "apple.com": " with auth_domain = \"PROJECT.firebaseapp.com\": Apple signs in only through the project's Firebase-hosted handler (README.md, \"Sign in with Apple\")"
        default: " with the OAuth client \(IdentityProvider.displayName(id)) issued for the project"
        }
    }

    /// The hosted sign-in: tokend serves the page at `http://localhost:PORT/`, the user's browser
    /// signs in there with Firebase's SDK at the project's handler, and the page posts the
    /// Firebase refresh token back, which one refresh here checks and turns into a session.
    func signInThroughHostedPage(
        _ hosted: HostedSignIn, id: String, request: LoginRequest, relay: (LoginStep) -> Void
    ) async -> Result<SignedIn, LoginFailure> {
        let name = IdentityProvider.displayName(id)
        guard request.linkingIDToken == nil else {
            return .failure(LoginFailure(
                .badRequest, code: "unsupported_upgrade",
                message: "an anonymous user cannot be linked to \(name) through the hosted sign-in page (Firebase's SDK there cannot take over tokend's user); sign in with --idp \(id) instead, which makes a new user"))
        }
        let state = OIDCProvider.randomToken()
        let page = hosted.page(apiKey: apiKey, providerID: id, emulatorHost: emulatorHost, state: state, tenantID: tenantID)
        let redirect: LoopbackRedirectListener.Redirect
        do {
            let listener = try await LoopbackRedirectListener.start(state: state, signInPage: page)
            // localhost, not 127.0.0.1: Firebase runs its SDK's sign-in only on an authorized
            // domain, and localhost is the one projects list (Authentication → Settings).
            relay(.openURL("http://localhost:\(listener.port)/"))
            relay(.waiting("waiting for the sign-in with \(name) in the browser, through \(hosted.authDomain) (localhost must be an authorized domain of the project)"))
            redirect = try await listener.firstRedirect(within: request.timeout, on: transport)
        } catch let failure as LoginFailure {
            return .failure(failure)
        } catch {
            return .failure(LoginFailure(.transient, code: "failed", message: "the sign-in page could not be served; try again"))
        }
        guard let refreshToken = redirect.refreshToken else {
            let code = redirect.error ?? "failed"
            // What the page said, already bounded and cleaned by the listener.
            let said = HostedSignIn.detail(redirect.errorDescription, code: code).map { " (the page said: \($0))" } ?? ""
            if let failure = hosted.failure(code: code, id: id) {
                return .failure(LoginFailure(failure.kind, code: code, message: failure.advice + said))
            }
            return .failure(LoginFailure(.denied, code: code, message: "the sign-in with \(name) did not finish in the browser (\(code))\(said); try again"))
        }
        // The page's session is checked the way every session is: one refresh.
        switch await refresh(refreshToken: refreshToken) {
        case .refreshed(var tokens):
            if tokens.refreshToken == nil { tokens.refreshToken = refreshToken }
            let provider = tokens.idToken.flatMap { FirebaseClaims(token: $0)?.signInProvider } ?? id
            return .success(SignedIn(tokens: tokens, signInProvider: provider))
        case .transient(let failure, _):
            return .failure(LoginFailure(.transient, code: failure.code, message: "Firebase did not confirm the new session (\(failure.message)); try again"))
        case .needsLogin(let failure), .misconfigured(let failure):
            return .failure(LoginFailure(.misconfigured, code: failure.code, message: "Firebase refused the session the sign-in page got (\(failure.message)); check that auth_domain is the account's project"))
        }
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
        case .secondFactor:
            return await finishSecondFactorSignIn(request)
        default:
            return .failure(LoginFailure(
                .badRequest, code: "unsupported_method",
                message: "Firebase accounts sign in with --email ADDRESS, --anonymous, --custom-token, --google or --idp ID"))
        }
    }
}
