import TokendCore

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

extension AccountState {
    /// A ticket for an operation starting now; `userAction` numbers a user action's own.
    func ticket(userAction: UInt64? = nil, narrowedTo scope: TokenScope? = nil, requested: Bool = false) -> AccountTicket {
        AccountTicket(
            incarnation: incarnation, endpoint: configuration.endpoint, generation: machine.generation,
            userAction: userAction ?? issuedUserActions, narrowedTo: scope, requested: requested)
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
    func account(_ name: String, holding ticket: AccountTicket, unless voiding: AccountChanges) -> AccountState? {
        guard let account = accounts[name], account.changes(since: ticket).isDisjoint(with: voiding) else { return nil }
        return account
    }
}
