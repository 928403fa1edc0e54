import TokendCore

extension AccountCommands {
    /// `store move`: all of it is the actor's (AccountEngine+StoreMove.swift), whose turns keep
    /// the copy, the check and the switch in order with the account's own writes.
    public func moveStore(account: String, to store: StoreKind) async -> Result<StoreMoveOutcome, TokendError> {
        await engine.moveStore(account, to: store)
    }
}
