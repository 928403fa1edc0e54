import TokendCore

/// What an account issues to each asynchronous operation it starts — a refresh or scoped grant,
/// a keyring read, a login, an upgrade, a deletion, a logout — and what the operation's result
/// shows when it comes back. Whether the result may still be applied is decided in one place,
/// `AccountEngine.Account.changes(since:)`; each caller names the changes that void its result.
struct AccountTicket: Sendable, Equatable {
    /// The account's life: a reload that removes and adds it again starts a new incarnation.
    var incarnation: UInt64
    /// The endpoint the account pointed at: a session belongs to the endpoint that issued it.
    var endpoint: String
    /// The machine's session generation (`AccountMachine.generation`).
    var generation: UInt64
    /// The user action this operation is (numbered as issued), or for other operations the last
    /// one issued when it began.
    var userAction: UInt64
    /// A refresh's own ticket from the machine (which checks it again, against its phase).
    var refresh: AccountMachine.Ticket?
    /// A refresh that is a grant of a token narrowed to this scope (AccountEngine+ScopedTokens.swift).
    var narrowedTo: TokenScope?
    /// The grant was asked for by a `token` request now, not by the recheck ahead of need.
    var requested = false
}

/// What changed in an account since a ticket was issued.
struct AccountChanges: OptionSet, Sendable {
    let rawValue: UInt8

    /// Removed (and perhaps added again) by a reload.
    static let removed = AccountChanges(rawValue: 1 << 0)
    /// Pointed at another endpoint by a reload.
    static let repointed = AccountChanges(rawValue: 1 << 1)
    /// Another session, or the same one refreshed or forgotten.
    static let session = AccountChanges(rawValue: 1 << 2)
    /// A user action issued after the ticket's has taken effect: the user's newest choice wins.
    static let overtaken = AccountChanges(rawValue: 1 << 3)
}

extension AccountEngine.Account {
    /// A ticket for an operation starting now; `userAction` numbers a user action's own.
    func ticket(userAction: UInt64? = nil, refresh: AccountMachine.Ticket? = nil, narrowedTo scope: TokenScope? = nil, requested: Bool = false) -> AccountTicket {
        AccountTicket(
            incarnation: incarnation, endpoint: configuration.endpoint, generation: machine.generation,
            userAction: userAction ?? issuedUserActions, refresh: refresh, narrowedTo: scope, requested: requested)
    }

    /// Everything that changed since `ticket` was issued. User actions commit in the order the
    /// user issued them: one whose number is below the last committed one is overtaken (its own
    /// commit, or none yet, leaves it current).
    func changes(since ticket: AccountTicket) -> AccountChanges {
        guard incarnation == ticket.incarnation else { return [.removed, .repointed, .session, .overtaken] }
        var changes: AccountChanges = []
        if configuration.endpoint != ticket.endpoint { changes.insert(.repointed) }
        if machine.generation != ticket.generation { changes.insert(.session) }
        if committedUserAction > ticket.userAction { changes.insert(.overtaken) }
        return changes
    }
}

extension AccountEngine {
    /// The account `name` if none of `voiding` happened since `ticket` was issued: the one check
    /// every asynchronous result passes before it is applied.
    func account(_ name: String, holding ticket: AccountTicket, unless voiding: AccountChanges) -> Account? {
        guard let account = accounts[name], account.changes(since: ticket).isDisjoint(with: voiding) else { return nil }
        return account
    }
}
