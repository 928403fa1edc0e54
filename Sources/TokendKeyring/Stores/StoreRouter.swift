import Synchronization
import TokendCore

/// The store the engine talks to: each account's operations go to its store — the one a move
/// recorded (`StoreRecord`), else the one its configuration names (`StoreSettings`) — and each
/// store has its own mood, so a store that cannot be used is a state like a locked keyring
/// (status, log, events) for its own accounts only, and never a silent fall-back to another
/// store. Stores are made on first use: a daemon configured for `tpm2` never touches the session bus.
public final class StoreRouter: SecretStore {
    private let settings: Mutex<StoreSettings>
    private let made = Mutex<[StoreKind: any SecretStore]>([:])
    private let make: @Sendable (StoreKind, StoreRouter) -> any SecretStore
    /// The moves' record and its file; nil file: nothing is recorded (tests of routing alone).
    private let record: Mutex<StoreRecord>
    public let recordFile: StoreRecordFile?
    /// The record could not be read at start: no account can be placed for sure, so none is read
    /// or written (an old copy must never be taken for the newest) until it is mended.
    public let recordProblem: KeyringError?

    /// `make` builds a store of a kind (tests hand in their own); the default builds the real ones.
    public init(
        settings: StoreSettings = StoreSettings(), timeout: Double, record recordFile: StoreRecordFile? = nil,
        make: (@Sendable (StoreKind, StoreRouter) -> any SecretStore)? = nil
    ) {
        self.settings = Mutex(settings)
        self.recordFile = recordFile
        let loaded = recordFile?.load() ?? .success(StoreRecord())
        record = Mutex((try? loaded.get()) ?? StoreRecord())
        if case .failure(let error) = loaded {
            recordProblem = error
            for kind in StoreKind.allCases { StoreProblem.note(loaded, kind) }
        } else {
            recordProblem = nil
        }
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

    /// What the moves recorded.
    public var moves: StoreRecord { record.withLock { $0 } }

    /// The store of `kind`, made now if it was never used.
    public func store(_ kind: StoreKind) -> any SecretStore {
        made.withLock { stores in
            if let store = stores[kind] { return store }
            let store = make(kind, self)
            stores[kind] = store
            return store
        }
    }

    /// The account's store: where a move put it, else where the configuration says.
    public func kind(of account: String) -> StoreKind? { effectiveKind(of: account) }

    public var router: StoreRouter? { self }

    public func effectiveKind(of account: String) -> StoreKind {
        record.withLock { $0.accounts[account]?.store } ?? current.store(of: account)
    }

    /// Every store some account (or the default) uses, moved accounts' included: the ones probed.
    public var storesInUse: [StoreKind] {
        let inUse = Set(current.storesInUse).union(record.withLock { $0.accounts.values.compactMap(\.store) })
        return StoreKind.allCases.filter(inUse.contains)
    }

    /// Writes the record with the account's entry changed, then keeps it: the file first, so
    /// what the router acts on is never ahead of what a restart would read.
    public func changeRecord(_ account: String, _ change: (inout StoreRecord.Entry) -> Void) -> Result<Void, KeyringError> {
        if let recordProblem { return .failure(recordProblem) }
        return record.withLock { record in
            let changed = record.changing(account, change)
            guard changed != record else { return .success(()) }
            if let recordFile, case .failure(let error) = recordFile.save(changed) { return .failure(error) }
            record = changed
            return .success(())
        }
    }

    public func load(account: String, isolation: isolated (any Actor)?) async -> Result<TokenSet?, KeyringError> {
        if let recordProblem { return .failure(recordProblem) }
        return await store(effectiveKind(of: account)).load(account: account, isolation: isolation)
    }

    public func save(_ tokens: TokenSet, account: String, isolation: isolated (any Actor)?) async -> Result<Void, KeyringError> {
        if let recordProblem { return .failure(recordProblem) }
        return await store(effectiveKind(of: account)).save(tokens, account: account, isolation: isolation)
    }

    public func delete(account: String, ifRefreshToken: String?, isolation: isolated (any Actor)?) async -> Result<Bool, KeyringError> {
        if let recordProblem { return .failure(recordProblem) }
        return await store(effectiveKind(of: account)).delete(account: account, ifRefreshToken: ifRefreshToken, isolation: isolation)
    }

    public func accounts(isolation: isolated (any Actor)?) async -> Result<[String], KeyringError> {
        if let recordProblem { return .failure(recordProblem) }
        var names: Set<String> = []
        for kind in storesInUse {
            switch await store(kind).accounts(isolation: isolation) {
            case .success(let found): names.formUnion(found)
            case .failure(let error): return .failure(error)
            }
        }
        return .success(names.sorted())
    }

    /// The worst mood among the stores in use (`states` has each one's).
    public func state(isolation: isolated (any Actor)?) async -> KeyringState {
        await states(isolation: isolation).values.max { $0.severity < $1.severity } ?? .available
    }

    /// Each store in use, probed: an account is shown and served by its own store's mood.
    public func states(isolation: isolated (any Actor)?) async -> [StoreKind?: KeyringState] {
        if recordProblem != nil { return Dictionary(uniqueKeysWithValues: storesInUse.map { (Optional($0), KeyringState.unavailable) }) }
        var states: [StoreKind?: KeyringState] = [:]
        for kind in storesInUse { states[kind] = await store(kind).state(isolation: isolation) }
        return states
    }

    /// The Secret Service's bulk read, kept to the accounts that live there; the other stores'
    /// accounts are read one by one (a file or an entry each: no bulk cost to save).
    public func loadAll(isolation: isolated (any Actor)?) async -> Result<StoredSessions, KeyringError> {
        guard recordProblem == nil, storesInUse.contains(.secretService) else { return .success(StoredSessions(sessions: [:], othersMayExist: true)) }
        let read = await store(.secretService).loadAll(isolation: isolation)
        guard storesInUse != [.secretService] else { return read }
        return read.map { found in
            StoredSessions(sessions: found.sessions.filter { effectiveKind(of: $0.key) == .secretService }, othersMayExist: true)
        }
    }
}

extension KeyringState {
    /// How unusable: a summary names the worst of the stores.
    public var severity: Int {
        switch self {
        case .available: 0
        case .needsConfirmation: 1
        case .locked: 2
        case .unavailable: 3
        }
    }
}

extension StoreRouter {
    /// What `status` says of an account a move put in another store than the configuration
    /// names: that a move decides, and how to follow the configuration. Nil when they agree (the
    /// record still pins the account, so a later edit of `store` cannot strand its session).
    public func note(on account: String) -> String? {
        guard let moved = moves.accounts[account]?.store else { return nil }
        let configured = current.store(of: account)
        guard configured != moved else { return nil }
        return "moved here by tokenctl store move; the configuration says \(configured.rawValue), which applies once you run tokenctl store move \(account) --to \(configured.rawValue)"
    }
}
