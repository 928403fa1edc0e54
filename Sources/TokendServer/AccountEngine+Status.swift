import TokendCore
import TokendKeyring
import TokendProtocol

extension AccountEngine {
    /// `status` / `list`: every account, or one. Never a secret.
    public func statuses(account name: String?) -> Result<[AccountStatus], TokendError> {
        if let name, accounts[name] == nil { return .failure(missingAccount(name)) }
        let now = clock.now()
        let names = name.map { [$0] } ?? accounts.keys.sorted()
        return .success(names.compactMap { name in
            accounts[name].map { Self.status(of: $0, named: name, keyring: keyringState, at: now) }
        })
    }

    /// What `status` shows of one account: a pure projection of its machine and configuration
    /// (`keyring` is the keyring's mood, shown only when it touches the account).
    static func status(of account: Account, named name: String, keyring keyringState: KeyringState, at now: Date) -> AccountStatus {
        let machine = account.machine
        let configuration = account.configuration
        var status = AccountStatus(
            name: name, provider: configuration.kind.rawValue, state: machine.stateName(at: now),
            keyring: account.unsaved || keyringState != .available ? keyringState.rawValue : KeyringState.available.rawValue)
        if let expiresAt = machine.tokens?.token(configuration.defaultTokenKind)?.expiresAt ?? machine.tokens?.expiresAt {
            status.expiresAt = Timestamp.format(expiresAt)
            status.expiresIn = max(0, Int(saturating: expiresAt.timeIntervalSince(now).rounded(.down)))
        }
        status.lastRefresh = machine.lastRefresh.map(Timestamp.format)
        status.nextRefresh = machine.nextWake.map { Timestamp.format(max($0, now)) }
        status.lastError = machine.lastError
        status.unsaved = account.unsaved ? true : nil
        status.gitHosts = configuration.gitHosts.isEmpty ? nil : configuration.gitHosts
        status.gitUsername = configuration.gitUsername
        if case .backingOff(let until, let attempt) = machine.phase {
            status.message = "refresh failed \(attempt + 1) time(s) in a row; next try at \(Timestamp.format(until))"
        } else {
            status.message = machine.phaseError?.message
        }
        return status
    }

    /// One line for systemd's STATUS=: "3 accounts: 2 active, 1 needs login; keyring locked".
    public func statusSummary() -> String {
        let counts = accounts.census.counts(at: clock.now())
        let states = counts.sorted { ($0.value, $1.key) > ($1.value, $0.key) }
            .map { "\($0.value) \($0.key.split(separator: "_").joined(separator: " "))" }
        var summary = "\(accounts.count) account\(accounts.count == 1 ? "" : "s")"
        if !states.isEmpty { summary += ": " + states.joined(separator: ", ") }
        if configurationProblem != nil { summary += "; configuration broken" }
        if keyringState != .available { summary += "; keyring \(keyringState.rawValue)" }
        return summary
    }
}
