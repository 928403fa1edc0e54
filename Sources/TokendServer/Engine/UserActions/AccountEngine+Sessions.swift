import Logging
import TokendCore
import TokendKeyring
import TokendProtocol
import TokendProviders

extension AccountEngine {
    /// Stores a session from an import (or a login), then refreshes it so the caller learns at
    /// once whether the provider accepts it. Wins over any refresh in flight.
    public func install(account name: String, tokens: TokenSet, timeout: Double) async -> Result<Date?, TokendError> {
        guard let account = accounts[name] else { return .failure(missingAccount(name)) }
        let start = clock.now()
        let backoff = account.machine.backoff(at: start)
        await apply(.sessionGiven(tokens, committing: nil, at: start, jitterDraw: drawJitter()), to: name)
        guard let installed = accounts[name]?.machine.tokens else { return .failure(missingAccount(name)) }
        await apply(.sessionStored(installed, await store.save(installed, account: name)), to: name)
        hub.publish(AccountEvent(.imported, account: name, at: clock.now()))
        logger.info("session imported", metadata: ["account": "\(name)"])
        if let backoff { return .failure(Advice.importedDuringBackoff(checkedAt: backoff)) }
        startRefresh(name, force: true)
        let outcome = await awaitRefreshOutcome(name, since: start, deadline: start.addingTimeInterval(timeout))
        // The keyring holds the imported refresh token alone: its first ID token is written at
        // once, not paced, so a restart soon after importing many accounts serves them from the
        // keyring instead of refreshing every one of them.
        if case .success = outcome, accounts[name]?.writeBackDeferred == true {
            await writeBackOutOfTurn(name)
        }
        return outcome
    }

    /// Forgets the account's session, in memory and in the keyring, revoking its refresh token at
    /// the provider first where the provider can. A failed revocation is reported, not fatal: the
    /// local session goes either way. Nil outcome: there was no session to revoke.
    public func logout(account name: String) async -> Result<LogoutOutcome, TokendError> {
        guard let account = accounts[name] else { return .failure(missingAccount(name)) }
        let held = account.machine.tokens?.refreshToken
        let provider = account.provider
        let deleted = await forgetSession(name, session: held, committing: nil, reason: "logged out; run: tokenctl login \(name)") {
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
    /// its keyring item: a logout (`committing` nil: a user action that takes effect now), or a
    /// user deleted at the provider (`committing` its ticket). `beforeDeleting` runs in between
    /// (a logout revokes there), once nothing in memory can use the session any more. The delete
    /// names what it deletes: the item goes only if it still holds `session` (the refresh token
    /// forgotten; any item when none was held), and not at all when a user action issued after
    /// this one (an import, a login) committed meanwhile: its session is newer.
    func forgetSession(
        _ name: String, session: String?, committing action: AccountTicket?, reason: String,
        beforeDeleting: (() async -> RevocationOutcome?)? = nil
    ) async -> (result: Result<Void, KeyringError>, revocation: RevocationOutcome?, superseded: Bool) {
        guard accounts[name] != nil else { return (.success(()), nil, false) }
        await apply(.sessionForgotten(reason: reason, committing: action), to: name)
        guard let ticket = action ?? accounts[name]?.ticket() else { return (.success(()), nil, false) }
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
