import Synchronization
import TokendCore

/// The store the engine talks to: each account's operations go to the store its configuration
/// names (`StoreSettings`), and the keyring's mood is the worst of the stores in use, so a store
/// that cannot be used is a state like a locked keyring (status, log, events) and never a silent
/// fall-back to another store. Stores are made on first use: a daemon configured for `tpm2` never
/// touches the session bus.
public final class StoreRouter: SecretStore {
    private let settings: Mutex<StoreSettings>
    private let made = Mutex<[StoreKind: any SecretStore]>([:])
    private let make: @Sendable (StoreKind, StoreRouter) -> any SecretStore

    /// `make` builds a store of a kind (tests hand in their own); the default builds the real ones.
    public init(settings: StoreSettings = StoreSettings(), timeout: Double, make: (@Sendable (StoreKind, StoreRouter) -> any SecretStore)? = nil) {
        self.settings = Mutex(settings)
        self.make = make ?? { kind, router in
            switch kind {
            case .secretService: LibsecretStore(timeout: timeout)
            case .pass: QueuedStore.pass(timeout: timeout, prefix: { router.current.passPrefix })
            case .tpm2: QueuedStore.tpm2(timeout: timeout, tcti: { router.current.tpm2TCTI })
            }
        }
    }

    /// The settings now in force (a reload replaces them before it reads added accounts).
    public var current: StoreSettings { settings.withLock { $0 } }

    public func apply(_ new: StoreSettings) { settings.withLock { $0 = new } }

    /// The store of `kind`, made now if it was never used.
    public func store(_ kind: StoreKind) -> any SecretStore {
        made.withLock { stores in
            if let store = stores[kind] { return store }
            let store = make(kind, self)
            stores[kind] = store
            return store
        }
    }

    public func store(of account: String) -> any SecretStore { store(current.store(of: account)) }

    public func load(account: String, isolation: isolated (any Actor)?) async -> Result<TokenSet?, KeyringError> {
        await store(of: account).load(account: account, isolation: isolation)
    }

    public func save(_ tokens: TokenSet, account: String, isolation: isolated (any Actor)?) async -> Result<Void, KeyringError> {
        await store(of: account).save(tokens, account: account, isolation: isolation)
    }

    public func delete(account: String, ifRefreshToken: String?, isolation: isolated (any Actor)?) async -> Result<Bool, KeyringError> {
        await store(of: account).delete(account: account, ifRefreshToken: ifRefreshToken, isolation: isolation)
    }

    public func accounts(isolation: isolated (any Actor)?) async -> Result<[String], KeyringError> {
        var names: Set<String> = []
        for kind in current.storesInUse {
            switch await store(kind).accounts(isolation: isolation) {
            case .success(let found): names.formUnion(found)
            case .failure(let error): return .failure(error)
            }
        }
        return .success(names.sorted())
    }

    /// The worst mood among the stores in use: one account's unusable store is the daemon's
    /// state to report, as a locked keyring is.
    public func state(isolation: isolated (any Actor)?) async -> KeyringState {
        var worst = KeyringState.available
        for kind in current.storesInUse {
            let state = await store(kind).state(isolation: isolation)
            if state.severity > worst.severity { worst = state }
        }
        return worst
    }

    /// The Secret Service's bulk read, kept to the accounts that live there; the other stores'
    /// accounts are read one by one (a file or an entry each: no bulk cost to save).
    public func loadAll(isolation: isolated (any Actor)?) async -> Result<StoredSessions, KeyringError> {
        let settings = current
        guard settings.storesInUse.contains(.secretService) else { return .success(StoredSessions(sessions: [:], othersMayExist: true)) }
        let read = await store(.secretService).loadAll(isolation: isolation)
        guard settings.storesInUse != [.secretService] else { return read }
        return read.map { found in
            StoredSessions(sessions: found.sessions.filter { settings.store(of: $0.key) == .secretService }, othersMayExist: true)
        }
    }
}

extension KeyringState {
    /// How unusable: the router reports the worst of its stores.
    var severity: Int {
        switch self {
        case .available: 0
        case .needsConfirmation: 1
        case .locked: 2
        case .unavailable: 3
        }
    }
}
