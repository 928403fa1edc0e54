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
        return .success(accounts.reports(name.map { [$0] } ?? accounts.names, keyring: keyringState, at: clock.now()))
    }

    /// One line for systemd's STATUS=: "3 accounts: 2 active, 1 needs login; keyring locked".
    public func statusSummary() -> String {
        accounts.summary(keyring: keyringState, configurationBroken: configurationProblem != nil, at: clock.now())
    }
}
