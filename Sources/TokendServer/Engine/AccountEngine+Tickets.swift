import TokendCore

extension AccountEngine {
    /// The account `name` if none of `voiding` happened since `ticket` was issued: the one check
    /// every asynchronous result passes before it is applied.
    func account(_ name: String, holding ticket: AccountTicket, unless voiding: AccountChanges) -> AccountState? {
        guard let account = accounts[name], account.changes(since: ticket).isDisjoint(with: voiding) else { return nil }
        return account
    }
}
