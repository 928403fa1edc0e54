import Logging
import TokendCore
import TokendKeyring
import TokendProtocol
import TokendProviders

extension AccountEngine {
    /// Stores a session from an import (or a login), then refreshes it so the caller learns at
    /// once whether the provider accepts it. Wins over any refresh in flight.
    public func install(account name: String, tokens: TokenSet, timeout: Double) async -> Result<Date?, TokendError> {
        guard var account = accounts[name] else { return .failure(missingAccount(name)) }
        let start = clock.now()
        var tokens = tokens
        tokens.endpoint = account.configuration.endpoint
        // A new session does not lift the provider's rate limit: it waits out the backoff too.
        let backoff = account.machine.backoff(at: start)
        account.commitNewUserAction()
        account.machine.install(tokens, unit: random())
        if let backoff { account.machine.holdBackoff(until: backoff) }
        scheduler.disarm(&account.wake)
        accounts[name] = account
        wake(name)
        let saved = await store.save(tokens, account: name)
        if accounts[name]?.machine.tokens == tokens { accounts[name]?.unsaved = !noteKeyring(saved, account: name) }
        hub.publish(AccountEvent(.imported, account: name, at: clock.now()))
        logger.info("session imported", metadata: ["account": "\(name)"])
        if let backoff {
            schedule(name)
            return .failure(Advice.importedDuringBackoff(checkedAt: backoff))
        }
        startRefresh(name, force: true)
        return await awaitRefreshOutcome(name, since: start, deadline: start.addingTimeInterval(timeout))
    }

    /// Forgets the account's session, in memory and in the keyring, revoking its refresh token at
    /// the provider first where the provider can. A failed revocation is reported, not fatal: the
    /// local session goes either way. Nil outcome: there was no session to revoke.
    public func logout(account name: String) async -> Result<LogoutOutcome, TokendError> {
        guard var account = accounts[name] else { return .failure(missingAccount(name)) }
        account.commitNewUserAction()
        accounts[name] = account
        let held = account.machine.tokens?.refreshToken
        let provider = account.provider
        let deleted = await forgetSession(name, session: held, ticket: account.ticket(), reason: "logged out; run: tokenctl login \(name)") {
            // Revoked before the keyring item goes: should revocation fail, that is reported,
            // and the local session still goes.
            guard let held else { return nil }
            let outcome = await provider.revoke(refreshToken: held)
            switch outcome {
            case .failed(let failure):
                self.logger.warning("revocation at the provider failed; the local session is removed anyway", metadata: [
                    "account": "\(name)", "code": "\(failure.code)", "error": "\(failure.message)",
                ])
            case .revoked:
                self.logger.info("session revoked at the provider", metadata: ["account": "\(name)"])
            case .unsupported:
                break
            }
            return outcome
        }
        if deleted.superseded {
            // An import or login issued after this logout has already stored its session: the
            // user's newest command wins, and the logout says so rather than claim success.
            logger.notice("a newer session arrived while logging out; it is kept", metadata: ["account": "\(name)"])
            return .success(LogoutOutcome(revocation: deleted.revocation, supersededByNewerSession: true))
        }
        hub.publish(AccountEvent(.loggedOut, account: name, at: clock.now()))
        publishSignedOut(name, reason: "logout")
        logger.info("logged out", metadata: ["account": "\(name)"])
        return deleted.result.map { LogoutOutcome(revocation: deleted.revocation) }.mapError { Advice.logoutNotDeleted($0, account: name) }
    }

    /// Forgets the account's session in memory (anything in flight becomes stale) and deletes
    /// its keyring item: a logout, or a user deleted at the provider. `beforeDeleting` runs in
    /// between (a logout revokes there), once nothing in memory can use the session any more.
    /// The delete names what it deletes: the item goes only if it still holds `session` (the
    /// refresh token forgotten; any item when none was held), and not at all when a user action
    /// issued after `ticket`'s (an import, a login) committed meanwhile: its session is newer.
    func forgetSession(
        _ name: String, session: String?, ticket: AccountTicket, reason: String, beforeDeleting: (() async -> RevocationOutcome?)? = nil
    ) async -> (result: Result<Void, KeyringError>, revocation: RevocationOutcome?, superseded: Bool) {
        guard var account = accounts[name] else { return (.success(()), nil, false) }
        account.machine.forget(reason: reason)
        account.unsaved = false
        scheduler.disarm(&account.wake)
        accounts[name] = account
        wake(name)
        let revocation = await beforeDeleting?()
        guard self.account(name, holding: ticket, unless: .overtaken) != nil else { return (.success(()), revocation, true) }
        let deleted = await store.delete(account: name, ifRefreshToken: session).map { _ in () }
        _ = noteKeyring(deleted, account: name)
        return (deleted, revocation, false)
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
