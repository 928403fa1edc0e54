import Logging
import TokendCore
import TokendKeyring
import TokendProtocol
import TokendProviders

/// What a finished login tells its client: never a token.
public struct LoginSummary: Sendable, Equatable {
    public var expiresAt: Date?
    public var signInProvider: String?
    /// The session replaced belonged to another user: said in the answer and the event, since
    /// the account now hands out someone else's tokens (a login done by mistake, or forged).
    public var replacedOtherUser = false
}

extension LoginFailure.Kind {
    /// The protocol's error code for a failed sign-in (tokenctl turns it into an exit status).
    var errorCode: TokendError.Code {
        switch self {
        case .denied: .needsLogin
        case .misconfigured: .configError
        case .transient, .timedOut: .unavailable
        case .badRequest: .badRequest
        }
    }
}

extension LoginFailure {
    /// The failure as the `login` op reports it: the provider's code first, so scripts and
    /// people can both read it.
    var tokendError: TokendError { TokendError(kind.errorCode, "\(code): \(message)") }
}

extension AccountCommands {
    /// A provider that has not finished (nor failed) this long after the login's own timeout
    /// is stuck: the engine gives up so the account's login slot is not held forever.
    static let loginGrace: Double = SharedDefaults.loginGrace

    /// Runs the provider's sign-in for `name`, relaying each step to `progress`, then installs
    /// the session it produced: atomically (one keyring replace), winning over any refresh in
    /// flight, and only if no user action issued after this one has taken effect meanwhile.
    /// The replaced refresh token is revoked at the provider once the new one is stored.
    public func login(
        account name: String, _ request: LoginRequest, progress: @escaping @Sendable (LoginStep) -> Void,
        announce kind: Event.Kind = .signedIn, reason: String? = nil
    ) async -> Result<LoginSummary, TokendError> {
        // One interactive login at a time: the user answers one browser or device prompt.
        let interactive = request.method.isInteractive
        let issued: IssuedUserAction
        switch await engine.issueUserAction(name, interactive: interactive, signingInWith: request.method) {
        case .failure(let error): return .failure(error)
        case .success(let action): issued = action
        }
        let result = await signIn(name, request, issued, progress: progress, announce: kind, reason: reason)
        await engine.userActionEnded(name, issued.ticket, interactive: interactive)
        return result
    }

    private func signIn(
        _ name: String, _ request: LoginRequest, _ issued: IssuedUserAction, progress: @escaping @Sendable (LoginStep) -> Void,
        announce kind: Event.Kind, reason: String?
    ) async -> Result<LoginSummary, TokendError> {
        let provider = issued.provider
        let start = clock.now()
        logger.info("login started", metadata: ["account": "\(name)", "method": "\(request.method.rawValue)"])
        let signedIn: SignedIn
        switch await Self.runFlow(provider, request, until: clock.now().addingTimeInterval(request.timeout + Self.loginGrace), on: engine.timers, progress: progress) {
        case .success(let done):
            signedIn = done
        case .failure(let failure):
            logger.notice("login failed", metadata: ["account": "\(name)", "method": "\(request.method.rawValue)", "code": "\(failure.code)"])
            return .failure(Advice.management(failure.tokendError, account: name))
        }
        guard let refreshToken = signedIn.tokens.refreshToken, !refreshToken.isEmpty else {
            return .failure(Advice.signInWithoutRefreshToken)
        }
        if !signedIn.narrowedScopes.isEmpty {
            // The session works, but with less than the account asked for: worth a line.
            logger.warning("the provider granted fewer scopes than asked", metadata: [
                "account": "\(name)", "not_granted": "\(signedIn.narrowedScopes.joined(separator: " "))",
            ])
        }
        // Lifetimes count from the start of the login: never longer than the truth.
        var tokens = TokenSet(refreshToken: refreshToken).merging(signedIn.tokens, sentAt: start, at: clock.now())
        tokens.scopes = signedIn.grantedScopes
        return await installSignIn(name, tokens, ticket: issued.ticket, signInProvider: signedIn.signInProvider, provider: provider, announce: kind, reason: reason)
    }
    /// The provider's flow, bounded by `deadline` (the request's timeout plus `loginGrace`).
    static func runFlow(
        _ provider: any TokenProvider, _ request: LoginRequest, until deadline: Date, on timers: any TimerSource,
        progress: @escaping @Sendable (LoginStep) -> Void
    ) async -> Result<SignedIn, LoginFailure> {
        await withTaskGroup(of: Result<SignedIn, LoginFailure>?.self) { group in
            group.addTask {
                do {
                    for try await step in provider.login(request) {
                        if case .done(let signedIn) = step { return .success(signedIn) }
                        progress(step)
                    }
                    if Task.isCancelled { return .failure(LoginFailure(.timedOut, code: "cancelled", message: "the login was cancelled")) }
                    return .failure(LoginFailure(.transient, code: "incomplete", message: "the sign-in ended without a session; try again"))
                } catch let failure as LoginFailure {
                    return .failure(failure)
                } catch {
                    return .failure(LoginFailure(.transient, code: "failed", message: "the sign-in failed; try again"))
                }
            }
            group.addTask {
                guard await timers.sleep(until: deadline) else { return nil }
                return .failure(LoginFailure(
                    .timedOut, code: "timeout", message: "the sign-in did not finish within \(Int(saturating: request.timeout)) s; run the login again"))
            }
            var outcome: Result<SignedIn, LoginFailure> = .failure(LoginFailure(.timedOut, code: "cancelled", message: "the login was cancelled"))
            if let first = await group.next(), let first { outcome = first }
            group.cancelAll()
            return outcome
        }
    }

    /// Replaces the account's session with a sign-in's, unless a newer user action has already
    /// taken effect (then the sign-in's session is dropped, and revoked where the provider can).
    func installSignIn(
        _ name: String, _ tokens: TokenSet, ticket: AccountTicket, signInProvider: String?, provider: any TokenProvider,
        announce kind: Event.Kind, reason: String?
    ) async -> Result<LoginSummary, TokendError> {
        let previous: TokenSet?, installed: TokenSet, stored: Bool
        switch await engine.commitSession(name, tokens, committing: ticket) {
        case .missing:
            return .failure(await engine.missingAccount(name))
        case .configurationChanged:
            logger.notice("a login finished after the account's configuration changed; its session is dropped", metadata: ["account": "\(name)"])
            return .failure(Advice.repointedDuringSignIn(name))
        case .overtaken:
            logger.notice("a login finished after a newer command changed the account; its session is dropped", metadata: ["account": "\(name)"])
            _ = await provider.revoke(refreshToken: tokens.refreshToken)
            return .failure(Advice.overtakenDuringSignIn(name))
        case .installed(let replaced, let session, let written, _):
            (previous, installed, stored) = (replaced, session, written)
        }
        var event = Event(kind, account: name, at: clock.now())
        event.signInProvider = signInProvider
        event.reason = reason
        event.expiresAt = installed.expiresAt.map(Timestamp.format)
        event.email = installed.idToken.flatMap { JWTClaims(token: $0)?.email }
        let replacedOtherUser = Self.differentUsers(previous, installed)
        event.replacedOtherUser = replacedOtherUser ? true : nil
        if replacedOtherUser { logger.notice("the login replaced another user's session", metadata: ["account": "\(name)"]) }
        narrator.hub.publish(event)
        logger.info("signed in", metadata: ["account": "\(name)", "provider": "\(signInProvider ?? "-")", "stored": "\(stored)"])
        // Only once the new session is safely stored may the old one stop working.
        if stored, let previous, previous.refreshToken != installed.refreshToken {
            narrator.revocation(await provider.revoke(refreshToken: previous.refreshToken), of: name, replaced: true)
        }
        return .success(LoginSummary(expiresAt: installed.expiresAt, signInProvider: signInProvider, replacedOtherUser: replacedOtherUser))
    }

    /// Whether two sessions are known to belong to different users: both ID tokens name a
    /// subject (OIDC `sub`, Firebase's uid) and the subjects differ. Unknown is not different.
    static func differentUsers(_ previous: TokenSet?, _ next: TokenSet) -> Bool {
        guard let before = previous?.idToken.flatMap({ JWTClaims(token: $0)?.subject }),
            let after = next.idToken.flatMap({ JWTClaims(token: $0)?.subject })
        else { return false }
        return before != after
    }
}
