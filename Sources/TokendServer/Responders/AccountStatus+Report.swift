import TokendCore
import TokendProtocol

extension AccountStatus {
    /// What `status` and `list` write of one account: dates as RFC 3339, `expires_in` in whole
    /// seconds rounded down (never more life than the token has), absent fields left out.
    init(_ report: AccountReport) {
        self.init(name: report.name, provider: report.provider.rawValue, state: report.state, keyring: report.keyring.rawValue)
        if let expiresAt = report.expiresAt {
            self.expiresAt = Timestamp.format(expiresAt)
            expiresIn = max(0, Int(saturating: expiresAt.timeIntervalSince(report.at).rounded(.down)))
        }
        lastRefresh = report.lastRefresh.map(Timestamp.format)
        nextRefresh = report.nextRefresh.map(Timestamp.format)
        lastError = report.lastError
        message = report.message
        unsaved = report.unsaved ? true : nil
        store = report.store?.rawValue
        storeNote = report.storeNote
        gitHosts = report.gitHosts.isEmpty ? nil : report.gitHosts
        gitUsername = report.gitUsername
        registryHosts = report.registryHosts.isEmpty ? nil : report.registryHosts
        registryUsername = report.registryUsername
    }
}
