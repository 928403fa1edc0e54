/// What changed in an account since a ticket was issued.
public struct AccountChanges: OptionSet, Sendable {
    public let rawValue: UInt8

    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Removed (and perhaps added again) by a reload.
    public static let removed = AccountChanges(rawValue: 1 << 0)
    /// Pointed at another endpoint by a reload.
    public static let repointed = AccountChanges(rawValue: 1 << 1)
    /// Another session, or the same one refreshed or forgotten.
    public static let session = AccountChanges(rawValue: 1 << 2)
    /// A user action issued after the ticket's has taken effect: the user's newest choice wins.
    public static let overtaken = AccountChanges(rawValue: 1 << 3)
}

extension AccountState {
    /// A ticket for an operation starting now; `userAction` numbers a user action's own.
    public func ticket(userAction: UInt64? = nil, narrowedTo scope: TokenScope? = nil, requested: Bool = false) -> AccountTicket {
        AccountTicket(
            incarnation: incarnation, endpoint: configuration.endpoint, generation: machine.generation,
            userAction: userAction ?? issuedUserActions, narrowedTo: scope, requested: requested)
    }

    /// Everything that changed since `ticket` was issued. User actions commit in the order the
    /// user issued them: one whose number is below the last committed one is overtaken (its own
    /// commit, or none yet, leaves it current).
    public func changes(since ticket: AccountTicket) -> AccountChanges {
        guard incarnation == ticket.incarnation else { return [.removed, .repointed, .session, .overtaken] }
        var changes: AccountChanges = []
        if configuration.endpoint != ticket.endpoint { changes.insert(.repointed) }
        if machine.generation != ticket.generation { changes.insert(.session) }
        if committedUserAction > ticket.userAction { changes.insert(.overtaken) }
        return changes
    }
}
