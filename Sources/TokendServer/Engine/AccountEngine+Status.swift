import TokendCore
import TokendKeyring
import TokendProtocol

extension AccountEngine {
    /// `status` / `list`: every account, or one. Never a secret.
    public func statuses(account name: String?) -> Result<[AccountReport], TokendError> {
        // A configuration refused at start serves no account: saying "no accounts" would read
        // as an empty file, so every listing answers what is wrong with it instead.
        if let configurationProblem { return .failure(TokendError(.configError, configurationProblem.description)) }
        if let name, accounts[name] == nil { return .failure(missingAccount(name)) }
        let now = clock.now()
        let names = name.map { [$0] } ?? accounts.names
        return .success(names.compactMap { name in
            accounts[name].map { Self.report(of: $0, named: name, keyring: keyringState, at: now) }
        })
    }

    /// What `status` shows of one account: a pure projection of its machine and configuration
    /// (`keyring` is the keyring's mood, which touches every account).
    static func report(of account: Account, named name: String, keyring keyringState: KeyringState, at now: Date) -> AccountReport {
        let machine = account.machine
        let configuration = account.configuration
        let message: String?
        if case .backingOff(let until, let attempt) = machine.phase {
            message = "refresh failed \(attempt + 1) time(s) in a row; next try at \(Timestamp.format(until))"
        } else {
            message = machine.phaseError?.message
        }
        var report = AccountReport(
            name: name, provider: configuration.kind, state: machine.stateName(at: now), keyring: keyringState, at: now,
            expiresAt: machine.tokens?.token(configuration.defaultTokenKind)?.expiresAt ?? machine.tokens?.expiresAt,
            lastRefresh: machine.lastRefresh,
            // A wake already due shows as now: the refresh is about to start, not in the past.
            nextRefresh: machine.nextWake.map { max($0, now) },
            lastError: machine.lastError, message: message, unsaved: account.unsaved,
            gitHosts: configuration.gitHosts, gitUsername: configuration.gitUsername)
        report.registryHosts = configuration.registryHosts
        report.registryUsername = configuration.registryUsername
        return report
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
