import Logging
import TokendCore
import TokendKeyring
import TokendProtocol
import TokendProviders

/// Firebase account management (the `account` op): every call uses the session's current ID
/// token (refreshed first when it is about to expire); upgrade and delete are user actions,
/// ordered with logins, imports and logouts.
extension AccountCommands {
    /// An ID token used for a management call must outlive the call: 30 s covers the request
    /// and a retry of it. Tokens that live shorter than three times that (an emulator's, a
    /// test's) are asked to outlive a third of their life instead, or no call could ever be made.
    static let managementMinValid: Double = 30

    /// The account's provider when it manages users, else why not.
    func manager(_ name: String) async -> Result<any AccountManaging, TokendError> {
        await engine.provider(of: name).flatMap { configuration, provider in
            guard let manager = provider as? any AccountManaging else {
                return .failure(Advice.notManaged(name, kind: configuration.kindName))
            }
            return .success(manager)
        }
    }

    /// A current ID token, or the error that says to sign in.
    func managementToken(_ name: String, timeout: Double) async -> Result<String, TokendError> {
        let held = await engine.session(of: name)
        let lifetime = held.flatMap { tokens in tokens.idTokenExpiresAt.flatMap { expiry in tokens.issuedAt.map { expiry.timeIntervalSince($0) } } }
        let minValid = min(Self.managementMinValid, (lifetime ?? .infinity) / 3)
        return await token(account: name, kind: .id, minValid: minValid, timeout: timeout).map(\.token)
    }

    /// The provider that manages the account's user, and a current ID token to call it with.
    func managedSession(_ name: String, timeout: Double) async -> Result<(any AccountManaging, String), TokendError> {
        switch await manager(name) {
        case .failure(let error): return .failure(error)
        case .success(let manager): return await managementToken(name, timeout: timeout).map { (manager, $0) }
        }
    }

    /// The user and the ID token's claims.
    public func showUser(account name: String, timeout: Double) async -> Result<(ManagedUser, FirebaseClaims?), TokendError> {
        let (manager, idToken): (any AccountManaging, String)
        switch await managedSession(name, timeout: timeout) {
        case .failure(let error): return .failure(error)
        case .success(let session): (manager, idToken) = session
        }
        return await manager.lookup(idToken: idToken).map { ($0, FirebaseClaims(token: idToken)) }.mapError { Advice.management($0.tokendError, account: name) }
    }

    /// One call to the user's manager with a current ID token: its failure worded for the user,
    /// its success logged as `done`.
    func managementCall<Value>(
        _ name: String, timeout: Double, done: Logger.Message, _ call: (any AccountManaging, String) async -> Result<Value, LoginFailure>
    ) async -> Result<Value, TokendError> {
        switch await managedSession(name, timeout: timeout) {
        case .failure(let error): return .failure(error)
        case .success(let (manager, idToken)):
            let answered = await call(manager, idToken).mapError { Advice.management($0.tokendError, account: name) }
            if case .success = answered { logger.info(done, metadata: ["account": "\(name)"]) }
            return answered
        }
    }

    /// Sends the verification email; returns the address it went to.
    public func sendVerificationEmail(account name: String, timeout: Double) async -> Result<String, TokendError> {
        await managementCall(name, timeout: timeout, done: "verification email requested") { manager, idToken in
            await manager.sendVerificationEmail(idToken: idToken)
        }
    }

    /// Sends a password-reset email to `email`, else to the session's address. Needs no session.
    public func sendPasswordReset(account name: String, email: String?) async -> Result<String, TokendError> {
        let manager: any AccountManaging
        switch await self.manager(name) {
        case .failure(let error): return .failure(error)
        case .success(let found): manager = found
        }
        let held = await engine.session(of: name)?.idToken.flatMap { FirebaseClaims(token: $0)?.email }
        guard let address = email ?? held, !address.isEmpty else {
            return .failure(Advice.noEmailToReset(name))
        }
        let sent = await manager.sendPasswordReset(email: address).mapError { Advice.management($0.tokendError, account: name) }
        if case .success = sent { logger.info("password reset requested", metadata: ["account": "\(name)"]) }
        return sent.map { address }
    }

    /// Turns the account's anonymous user into a permanent one with the same uid, and replaces
    /// the session with the one the provider issued for it.
    public func upgrade(account name: String, email: String, password: String, timeout: Double) async -> Result<LoginSummary, TokendError> {
        let (manager, idToken): (any AccountManaging, String)
        switch await managedSession(name, timeout: timeout) {
        case .failure(let error): return .failure(error)
        case .success(let session): (manager, idToken) = session
        }
        if let refusal = refuseUpgrade(name, idToken: idToken) { return .failure(refusal) }
        return await replaceSession(name, reason: "upgraded", next: "tokenctl login \(name) --email \(email)") {
            await manager.upgrade(idToken: idToken, email: email, password: password)
        }
    }

    /// Replaces the session with the one a change of the user (`change`: an upgrade, a second
    /// factor enrolled or removed) issued, as a user action: the same user (uid) or nothing, and
    /// announced as `user_changed` with `reason`.
    func replaceSession(
        _ name: String, reason: String, next: String, _ change: @Sendable () async -> Result<SignedIn, LoginFailure>
    ) async -> Result<LoginSummary, TokendError> {
        // Until the new session is installed (or the change failed), a refresh refused with the
        // old token is not taken as the end of the session (`passwordChangesInFlight`):
        // Firebase revokes the older sessions of a user whose password or factors change.
        let issued: IssuedUserAction
        switch await engine.issueUserAction(name, changingPassword: true) {
        case .failure(let error): return .failure(error)
        case .success(let action): issued = action
        }
        let result = await replaceSession(name, issued, reason: reason, next: next, change)
        await engine.userActionEnded(name, issued.ticket, changingPassword: true)
        return result
    }

    private func replaceSession(
        _ name: String, _ issued: IssuedUserAction, reason: String, next: String, _ change: @Sendable () async -> Result<SignedIn, LoginFailure>
    ) async -> Result<LoginSummary, TokendError> {
        let start = clock.now()
        let signedIn: SignedIn
        switch await change() {
        case .failure(let failure) where failure.sessionEnded:
            // The change went through and the provider ended the session with it: the held
            // session is dead, so it is forgotten (keyring item too) and the account needs a login.
            let error = Advice.management(failure.tokendError, account: name)
            let forgotten = await engine.forgetSession(name, committing: issued.ticket, reason: error.message)
            if !forgotten.superseded { narrator.publishSignedOut(name, reason: reason) }
            logger.notice("the provider ended the session with the change", metadata: ["account": "\(name)", "reason": "\(reason)"])
            return .failure(error)
        case .failure(let failure): return .failure(Advice.management(failure.tokendError, account: name))
        case .success(let done): signedIn = done
        }
        guard let refreshToken = signedIn.tokens.refreshToken else {
            return .failure(Advice.changedWithoutRefreshToken(next: next))
        }
        let tokens = TokenSet(refreshToken: refreshToken).merging(signedIn.tokens, sentAt: start, at: clock.now())
        if Self.differentUsers(issued.held, tokens) {
            return .failure(Advice.anotherUsersSession(next: next))
        }
        return await installSignIn(
            name, tokens, ticket: issued.ticket, signInProvider: signedIn.signInProvider, provider: issued.provider, announce: .userChanged, reason: reason)
    }

    /// Links a sign-in at an identity provider to the account's anonymous user (same uid),
    /// through the provider's flow for it; its steps go to `progress`.
    public func upgradeWithIdentityProvider(
        account name: String, _ identityProvider: String, device: Bool, timeout: Double, progress: @escaping @Sendable (LoginStep) -> Void
    ) async -> Result<LoginSummary, TokendError> {
        if case .failure(let error) = await manager(name) { return .failure(error) }
        let idToken: String
        switch await managementToken(name, timeout: Command.defaultTimeout) {
        case .failure(let error): return .failure(error)
        case .success(let token): idToken = token
        }
        if let refusal = refuseUpgrade(name, idToken: idToken) { return .failure(refusal) }
        var request = LoginRequest(method: .idp, timeout: timeout)
        request.identityProvider = identityProvider
        request.identityProviderDevice = device
        request.linkingIDToken = idToken
        return await login(account: name, request, progress: progress, announce: .userChanged, reason: "upgraded")
    }

    /// Only an anonymous user can be upgraded.
    func refuseUpgrade(_ name: String, idToken: String) -> TokendError? {
        let claims = FirebaseClaims(token: idToken)
        guard claims?.signInProvider != "anonymous" else { return nil }
        let how = claims?.signInProvider ?? "unknown"
        return Advice.alreadyPermanent(name, signedInWith: how)
    }

    /// What `delete` would remove, for a refusal without confirmation.
    public func describeDeletion(account name: String) async -> Result<String, TokendError> {
        if case .failure(let error) = await engine.provider(of: name) { return .failure(error) }
        guard let tokens = await engine.session(of: name) else {
            return .failure(Advice.noUserToDelete(name))
        }
        let claims = tokens.idToken.flatMap { FirebaseClaims(token: $0) }
        let who = claims.map { claims in
            var text = "user \(claims.uid ?? "?")"
            if let email = claims.email { text += " (\(email))" } else if claims.signInProvider == "anonymous" { text += " (anonymous)" }
            return text
        } ?? "the signed-in user"
        let project = tokens.idToken.flatMap { JWTClaims(token: $0)?.issuer }.map { " of project \($0.split(separator: "/").last.map(String.init) ?? $0)" } ?? ""
        return .success("this deletes Firebase \(who)\(project) for good, and \(name)'s stored session; to go ahead, add --yes (\"confirm\":true)")
    }

    /// Deletes the user at the provider, then forgets the session (unless a newer user action
    /// has replaced it meanwhile).
    public func deleteUser(account name: String, timeout: Double) async -> Result<Void, TokendError> {
        let (manager, idToken): (any AccountManaging, String)
        switch await managedSession(name, timeout: timeout) {
        case .failure(let error): return .failure(error)
        case .success(let session): (manager, idToken) = session
        }
        let ticket: AccountTicket
        switch await engine.issueUserAction(name) {
        case .failure(let error): return .failure(error)
        case .success(let issued): ticket = issued.ticket
        }
        if case .failure(let failure) = await manager.deleteUser(idToken: idToken) {
            return .failure(Advice.management(failure.tokendError, account: name))
        }
        logger.info("user deleted at the provider", metadata: ["account": "\(name)"])
        let deleted = await engine.forgetSession(name, committing: ticket, reason: Advice.userDeleted(name))
        guard !deleted.superseded else {
            logger.notice("a newer session arrived while the user was deleted; it is kept", metadata: ["account": "\(name)"])
            return .success(())
        }
        narrator.publishSignedOut(name, reason: "deleted")
        return deleted.result.mapError { Advice.deletedNotForgotten($0, account: name) }
    }
}
