import TokendCore
import TokendKeyring
import TokendProviders

/// The actor's side of the user's commands (AccountCommands): each step is one atomic change of
/// the account — a check of the command's ticket and the input it then applies — so a command
/// running outside the actor can never act on an account that changed under it.
extension AccountEngine {
    /// The account's configuration and provider, for a command that calls the provider itself.
    func provider(of name: String) -> Result<(AccountConfiguration, any TokenProvider), TokendError> {
        guard let account = accounts[name] else { return .failure(missingAccount(name)) }
        return .success((account.configuration, account.provider))
    }

    /// The session the account holds in memory.
    func session(of name: String) -> TokenSet? {
        accounts[name]?.tokens
    }

    /// Issues a user action on the account (`AccountState.issueUserAction`), with the provider
    /// it calls and the session it replaces as they are in this same turn.
    /// A login's `method` is checked in the same turn: a reload may change the provider between two.
    func issueUserAction(_ name: String, interactive: Bool = false, changingPassword: Bool = false, signingInWith method: LoginRequest.Method? = nil) -> Result<IssuedUserAction, TokendError> {
        guard var account = accounts[name] else { return .failure(missingAccount(name)) }
        if let method, let refusal = Advice.methodNotOffered(
            method.rawValue, offered: account.configuration.loginMethodNames, account: name, kind: account.configuration.kindName)
        {
            return .failure(refusal)
        }
        let issued = account.issueUserAction(interactive: interactive, changingPassword: changingPassword)
        accounts[name] = account
        return issued.map { IssuedUserAction(ticket: $0, provider: account.provider, held: account.tokens) }
    }

    func userActionEnded(_ name: String, _ ticket: AccountTicket, interactive: Bool = false, changingPassword: Bool = false) {
        accounts[name]?.userActionEnded(ticket, interactive: interactive, changingPassword: changingPassword)
    }

    /// Installs a session the user gave (an import: `action` nil; a login's: its ticket, unless
    /// a reload or a later-issued user action voided it meanwhile) and writes it to the keyring.
    /// It wins over any refresh in flight.
    func commitSession(_ name: String, _ tokens: TokenSet, committing action: AccountTicket?) async -> SessionCommit {
        guard let account = accounts[name] else { return .missing }
        if let action {
            let changes = account.changes(since: action)
            // The session belongs to the endpoint that issued it.
            guard changes.isDisjoint(with: [.removed, .repointed]) else { return .configurationChanged }
            guard !changes.contains(.overtaken) else { return .overtaken }
        }
        let previous = account.tokens
        let backoff = account.backoff(at: clock.now())
        await apply(.sessionGiven(tokens, committing: action, at: clock.now(), jitterDraw: drawJitter()), to: name)
        guard let installed = accounts[name]?.tokens else { return .missing }
        let saved = await store.save(installed, account: name)
        await apply(.sessionStored(installed, saved), to: name)
        return .installed(previous: previous, tokens: installed, stored: (try? saved.get()) != nil, backoff: backoff)
    }

    /// Forgets the session in memory and deletes its keyring item if it still holds the refresh
    /// token forgotten (given to `beforeDeleting`, where a logout revokes it); `superseded`: a
    /// later-issued user action committed first, and its newer session stays.
    func forgetSession(
        _ name: String, committing action: AccountTicket?, reason: String,
        beforeDeleting: (@Sendable (String?) async -> RevocationOutcome?)? = nil
    ) async -> (result: Result<Void, KeyringError>, revocation: RevocationOutcome?, superseded: Bool) {
        guard let account = accounts[name] else { return (.success(()), nil, false) }
        if let action, !account.changes(since: action).isDisjoint(with: .overtaken) { return (.success(()), nil, true) }
        let session = account.tokens?.refreshToken
        await apply(.sessionForgotten(reason: reason, committing: action), to: name)
        guard let ticket = action ?? accounts[name]?.ticket() else { return (.success(()), nil, false) }
        let revocation = await beforeDeleting?(session)
        guard self.account(name, holding: ticket, unless: .overtaken) != nil else { return (.success(()), revocation, true) }
        let deleted = await store.delete(account: name, ifRefreshToken: session).map { _ in () }
        _ = noteKeyring(deleted, account: name)
        return (deleted, revocation, false)
    }
}
