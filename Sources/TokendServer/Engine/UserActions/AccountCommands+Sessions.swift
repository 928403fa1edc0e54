import TokendCore
import TokendProtocol
import TokendProviders

extension AccountCommands {
    /// Stores a session from an import, then refreshes it so the caller learns at once whether
    /// the provider accepts it. Wins over any refresh in flight.
    public func install(account name: String, tokens: TokenSet, timeout: Double) async -> Result<Date?, TokendError> {
        let start = clock.now()
        guard case .installed(_, _, _, let backoff) = await engine.commitSession(name, tokens, committing: nil) else {
            return .failure(await engine.missingAccount(name))
        }
        narrator.hub.publish(Event(.imported, account: name, at: clock.now()))
        logger.info("session imported", metadata: ["account": "\(name)"])
        // A new session does not lift the provider's rate limit: it waits out the backoff too.
        if let backoff { return .failure(Advice.importedDuringBackoff(checkedAt: backoff)) }
        // A forced refresh says at once whether the provider takes the session; its first ID
        // token is written unpaced, so a restart soon after needs no refresh.
        if case .refused(let refusal) = await engine.forceRefresh(name, honouringBackoff: false) { return .failure(refusal) }
        let outcome = await refreshOutcome(name, since: start, deadline: start.addingTimeInterval(timeout))
        if case .success = outcome { await engine.writeBackOutOfTurn(name) }
        return outcome
    }

    /// Forgets the account's session, in memory and in the keyring, revoking its refresh token at
    /// the provider first where the provider can. A failed revocation is reported, not fatal: the
    /// local session goes either way. Nil outcome: there was no session to revoke.
    public func logout(account name: String) async -> Result<LogoutOutcome, TokendError> {
        // Right after a start the stored session may still be being read: its refresh token is the
        // one to revoke. The read ends within the keyring's timeout; the request's default bounds it.
        _ = await waitWhile(name, until: clock.now().addingTimeInterval(Command.defaultTimeout)) { $0.restoring }
        let provider: any TokenProvider
        switch await engine.provider(of: name) {
        case .failure(let error): return .failure(error)
        case .success(let found): provider = found.1
        }
        let narrator = narrator
        let deleted = await engine.forgetSession(name, committing: nil, reason: Advice.loggedOut(name)) { held in
            // Revoked before the keyring item goes: should revocation fail, that is reported,
            // and the local session still goes.
            guard let held else { return nil }
            let outcome = await provider.revoke(refreshToken: held)
            narrator.revocation(outcome, of: name, replaced: false)
            return outcome
        }
        if deleted.superseded {
            // An import or login issued after this logout has already stored its session: the
            // user's newest command wins, and the logout says so rather than claim success.
            logger.notice("a newer session arrived while logging out; it is kept", metadata: ["account": "\(name)"])
            return .success(LogoutOutcome(revocation: deleted.revocation, supersededByNewerSession: true))
        }
        narrator.hub.publish(Event(.loggedOut, account: name, at: clock.now()))
        narrator.publishSignedOut(name, reason: "logout")
        logger.info("logged out", metadata: ["account": "\(name)"])
        return deleted.result.map { LogoutOutcome(revocation: deleted.revocation) }.mapError { Advice.logoutNotDeleted($0, account: name) }
    }
}

/// What a logout came to.
public struct LogoutOutcome: Sendable, Equatable {
    /// What the provider did with the session's refresh token; nil when there was none to revoke.
    public var revocation: RevocationOutcome?
    /// An import or login issued after the logout stored a session while it ran: that session
    /// is kept (the user's newest command wins).
    public var supersededByNewerSession = false

    public init(revocation: RevocationOutcome?, supersededByNewerSession: Bool = false) {
        self.revocation = revocation
        self.supersededByNewerSession = supersededByNewerSession
    }
}
