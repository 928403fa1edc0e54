import TokendCore
import TokendKeyring
import TokendProtocol

/// One account as the engine sees it at one instant: what `status` and `list` show, in the
/// engine's terms (dates, the keyring's mood). The status handler turns it into wire text.
public struct AccountReport: Sendable, Equatable {
    public var name: String
    public var provider: ProviderKind
    /// The machine's state name (`active`, `retrying`, `needs_login`, …).
    public var state: String
    /// The keyring's mood as it touches this account.
    public var keyring: KeyringState
    /// The instant the report was taken: `expires_in` counts from it.
    public var at: Date
    public var expiresAt: Date?
    public var lastRefresh: Date?
    public var nextRefresh: Date?
    public var lastError: RefreshFailure?
    /// Why the account is in its state, in words that say what to do.
    public var message: String?
    /// The session held in memory has not reached the keyring yet.
    public var unsaved: Bool
    /// The store the account's session is kept in; nil from a store that does not say.
    public var store: StoreKind? = nil
    /// Why the account's store is not the configuration's own: a move put it there.
    public var storeNote: String? = nil
    public var gitHosts: [String]
    public var gitUsername: String?
    public var registryHosts: [String] = []
    public var registryUsername: String?
}

extension AccountReport {
    /// What `status` shows of one account: a pure projection of its state and configuration
    /// (`keyring` is the keyring's mood, which touches every account).
    init(_ account: AccountState, named name: String, keyring keyringState: KeyringState, at now: Date) {
        let configuration = account.configuration
        self.init(
            name: name, provider: configuration.kind, state: account.stateName(at: now), keyring: keyringState, at: now,
            expiresAt: account.tokens?.token(configuration.defaultTokenKind)?.expiresAt ?? account.tokens?.expiresAt,
            lastRefresh: account.lastRefresh,
            // A wake already due shows as now: the refresh is about to start, not in the past.
            nextRefresh: account.nextWake.map { max($0, now) },
            lastError: account.lastError, message: account.statusMessage, unsaved: account.unsaved,
            gitHosts: configuration.gitHosts, gitUsername: configuration.gitUsername)
        registryHosts = configuration.registryHosts
        registryUsername = configuration.registryUsername
    }
}
