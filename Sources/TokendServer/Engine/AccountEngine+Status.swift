import TokendCore
import TokendKeyring
import TokendProtocol

extension AccountEngine {
    /// `status` / `list`: every account, or one. Never a secret.
    public func statuses(account name: String?) -> Result<[AccountReport], TokendError> {
        // A configuration refused at start serves no account: saying "no accounts" would read
        // as an empty file, so every listing answers what is wrong with it instead.
        if let configurationProblem { return .failure(Advice.configurationBroken(configurationProblem.description)) }
        if let name, accounts[name] == nil { return .failure(missingAccount(name)) }
        var reports = accounts.reports(name.map { [$0] } ?? accounts.names, keyring: { self.keyringState(of: $0) }, at: clock.now())
        let router = (store as? BootAnchoredStore)?.router
        for index in reports.indices {
            reports[index].store = store.kind(of: reports[index].name)
            reports[index].storeNote = router?.note(on: reports[index].name)
        }
        return .success(reports)
    }

    /// One line for systemd's STATUS=: "3 accounts: 2 active, 1 needs login; keyring locked".
    public func statusSummary() -> String {
        accounts.summary(unusableStores: unusableStores, configurationBroken: configurationProblem != nil, at: clock.now())
    }

    /// The mood of the store that keeps the account's session.
    func keyringState(of name: String) -> KeyringState {
        keyringStates[store.kind(of: name)] ?? .available
    }

    /// "keyring locked", "store pass unavailable": each store that cannot be used now, worst first.
    var unusableStores: [String] {
        keyringStates.filter { $0.value != .available }
            .sorted { ($0.value.severity, $1.key?.rawValue ?? "") > ($1.value.severity, $0.key?.rawValue ?? "") }
            .map { kind, state in
                switch kind {
                case nil, .secretService?: "keyring \(state.rawValue)"
                case let kind?: "store \(kind.rawValue) \(state.rawValue)"
                }
            }
    }
}
