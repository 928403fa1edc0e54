import TokendCore

/// Where each account's token set lives between daemon runs (docs/architecture.md, "The keyring").
///
/// Every method enqueues its operation synchronously, before its first suspension, so calls made
/// from one actor reach the store in the order they were made (a save followed by a load sees the
/// save). Each operation has a deadline; one that has not finished by then answers `.timedOut`.
/// No method ever deletes or overwrites anything because of a locked or unreachable keyring.
public protocol SecretStore: AnyObject, Sendable {
    /// The account's token set; `nil` means there is definitely no item. A locked item answers
    /// `.failure(.locked)`, never `nil`; an unreadable one `.failure(.corrupt)`.
    func load(account: String, isolation: isolated (any Actor)?) async -> Result<TokenSet?, KeyringError>

    /// Replaces the account's item in one atomic write. A locked collection answers `.locked`
    /// without trying (trying would prompt for a password).
    func save(_ tokens: TokenSet, account: String, isolation: isolated (any Actor)?) async -> Result<Void, KeyringError>

    /// Deletes the account's item; with `ifRefreshToken` only if the stored refresh token is that
    /// one (compare-and-delete: a logout racing a rotation must not delete the new token).
    /// `true` if an item was deleted.
    func delete(account: String, ifRefreshToken: String?, isolation: isolated (any Actor)?) async -> Result<Bool, KeyringError>

    /// The names of all accounts that have an item, locked ones included (attributes stay
    /// readable when locked), sorted.
    func accounts(isolation: isolated (any Actor)?) async -> Result<[String], KeyringError>

    /// Whether the Secret Service is reachable and its default collection unlocked.
    func state(isolation: isolated (any Actor)?) async -> KeyringState

    /// The mood of each store this one sends accounts to, by the kind `kind(of:)` names (nil: a
    /// store that does not say), so that one store's trouble is shown on its own accounts only.
    func states(isolation: isolated (any Actor)?) async -> [StoreKind?: KeyringState]

    /// Every stored session the store can read and attribute in bulk, for a restore of many
    /// accounts: with gnome-keyring, reading items one by one costs time linear in the collection
    /// for each item, so 10,000 reads took minutes. Accounts it leaves out are read with `load`
    /// when `othersMayExist` says so.
    func loadAll(isolation: isolated (any Actor)?) async -> Result<StoredSessions, KeyringError>

    /// Which store keeps the account's session, for `status`; nil: this store does not say
    /// (a test double).
    func kind(of account: String) -> StoreKind?

    /// The router that chooses among stores, seen through any decorator (the fleet's), so that a
    /// move between stores finds it; nil: one store.
    var router: StoreRouter? { get }
}

/// What a bulk read (`SecretStore.loadAll`) found.
public struct StoredSessions: Sendable {
    /// By account: its token set, or why its item is unreadable (`.corrupt`).
    public var sessions: [String: Result<TokenSet, KeyringError>]
    /// Whether an account left out of `sessions` may still have an item: one that is locked,
    /// one whose secret does not name its account (written by hand or by an older tokend), or
    /// two naming the same account. False: a left-out account definitely has no item.
    public var othersMayExist: Bool

    public init(sessions: [String: Result<TokenSet, KeyringError>], othersMayExist: Bool) {
        self.sessions = sessions
        self.othersMayExist = othersMayExist
    }
}

extension SecretStore {
    public func kind(of account: String) -> StoreKind? { nil }

    public var router: StoreRouter? { nil }

    /// A store that is one store: its own mood, under the kind its accounts report.
    public func states(isolation: isolated (any Actor)?) async -> [StoreKind?: KeyringState] {
        [nil: await state(isolation: isolation)]
    }

    /// A store that cannot read in bulk: every account is read by itself.
    public func loadAll(isolation: isolated (any Actor)?) async -> Result<StoredSessions, KeyringError> {
        .success(StoredSessions(sessions: [:], othersMayExist: true))
    }
}

// Convenience forms that pick up the caller's isolation, so `await store.load(account: "work")`
// keeps the ordering guarantee. The isolation parameter is unlabelled here: with the label these
// would become default implementations of the requirements and could recurse forever.
extension SecretStore {
    public func load(account: String, _ isolation: isolated (any Actor)? = #isolation) async -> Result<TokenSet?, KeyringError> {
        await load(account: account, isolation: isolation)
    }

    public func save(_ tokens: TokenSet, account: String, _ isolation: isolated (any Actor)? = #isolation) async -> Result<Void, KeyringError> {
        await save(tokens, account: account, isolation: isolation)
    }

    public func delete(account: String, ifRefreshToken: String? = nil, _ isolation: isolated (any Actor)? = #isolation) async -> Result<Bool, KeyringError> {
        await delete(account: account, ifRefreshToken: ifRefreshToken, isolation: isolation)
    }

    public func accounts(_ isolation: isolated (any Actor)? = #isolation) async -> Result<[String], KeyringError> {
        await accounts(isolation: isolation)
    }

    public func state(_ isolation: isolated (any Actor)? = #isolation) async -> KeyringState {
        await state(isolation: isolation)
    }

    public func loadAll(_ isolation: isolated (any Actor)? = #isolation) async -> Result<StoredSessions, KeyringError> {
        await loadAll(isolation: isolation)
    }

    public func states(_ isolation: isolated (any Actor)? = #isolation) async -> [StoreKind?: KeyringState] {
        await states(isolation: isolation)
    }
}
