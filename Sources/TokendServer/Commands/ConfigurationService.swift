import TokendCore
import TokendProtocol

/// `reload`: the daemon's configuration file, read again. Not the engine's: the daemon owns the
/// file, the hooks and systemd's RELOADING/READY (Daemon/ReloadQueue.swift answers it).
public protocol ConfigurationService: Sendable {
    /// Re-reads the file and returns once the result is applied; a file that does not load is
    /// `config_error` with its place in the file, and the last good configuration keeps serving.
    func reload() async -> Result<ReloadSummary, TokendError>
}

/// What a successful reload applied.
public struct ReloadSummary: Sendable, Equatable {
    /// The file read.
    public var path: String
    /// The accounts it names, sorted.
    public var accounts: [String]

    public init(path: String, accounts: [String]) {
        self.path = path
        self.accounts = accounts
    }
}
