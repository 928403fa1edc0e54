import CLibsecret
import TokendCore
import TokendSystem

/// The Secret Service (GNOME keyring) through libsecret: one item per account, attributes
/// `application = tokend`, `account = NAME`, the secret the account's `TokenSet` as JSON.
///
/// Every libsecret call runs on the store's own thread, in the order the calls were made; each
/// operation answers by its deadline, `.timedOut` if the Secret Service has not (the call is then
/// cancelled, the operations queued behind it answer `.timedOut` too, and the thread carries on
/// with the next one). A save still waiting in the queue is replaced by a newer save of the same
/// account (see `KeyringQueue`). libsecret talks to the session bus of
/// the process (`DBUS_SESSION_BUS_ADDRESS` when it first connects); use one store per process.
public final class LibsecretStore: SecretStore {
    /// Per-operation deadline, in seconds, counted from when the operation starts (not from when
    /// it was queued). The default, 5 s: a healthy gnome-keyring answers in milliseconds and is
    /// D-Bus-activated in well under a second (measured here: ~0.2 s), while a request waiting on
    /// the keyring should fail soon enough for its client to retry.
    public var timeout: Double { queue.timeout }
    private let client: LibsecretClient
    private let queue: KeyringQueue

    /// Deadlines are armed on `timers` (real Dispatch timers unless a test passes a manual clock).
    public init(timeout: Double = 5, clock: any WallClock = SystemWallClock(), timers: (any TimerSource)? = nil) {
        let client = LibsecretClient()
        self.client = client
        queue = KeyringQueue(
            name: "tokend-keyring", timeout: timeout, clock: clock, timers: timers ?? SystemTimerSource(clock: clock),
            tearDown: { client.close() })
    }

    deinit { queue.stop() }

    public func load(account: String, isolation: isolated (any Actor)? = #isolation) async -> Result<TokenSet?, KeyringError> {
        await perform(account: account, waitsOutTheQueue: true, isolation: isolation) { client, cancellable in
            client.load(account: account, cancellable: cancellable)
        }
    }

    public func save(_ tokens: TokenSet, account: String, isolation: isolated (any Actor)? = #isolation) async -> Result<Void, KeyringError> {
        let json: String
        do {
            json = try tokens.keyringJSON(account: account)
        } catch {
            return .failure(KeyringError(.failed, "could not encode the token set"))
        }
        let client = self.client
        return await queue.write(account: account, payload: json, isolation: isolation) { json, cancellable in
            client.save(json, account: account, cancellable: cancellable)
        }
    }

    public func delete(account: String, ifRefreshToken: String?, isolation: isolated (any Actor)? = #isolation) async -> Result<Bool, KeyringError> {
        await perform(account: account, isolation: isolation) { client, cancellable in
            client.delete(account: account, ifRefreshToken: ifRefreshToken, cancellable: cancellable)
        }
    }

    public func accounts(isolation: isolated (any Actor)? = #isolation) async -> Result<[String], KeyringError> {
        await perform(account: nil, isolation: isolation) { client, cancellable in
            client.accounts(cancellable: cancellable)
        }
    }

    public func state(isolation: isolated (any Actor)? = #isolation) async -> KeyringState {
        let result = await perform(account: nil, isolation: isolation) { client, cancellable in
            client.state(cancellable: cancellable)
        }
        switch result {
        case .success(let state): return state
        // Still queued behind others: the keyring answers them, it is busy, not down.
        case .failure(let error) where error.code == .queued: return .available
        case .failure(let error) where [.timedOut, .needsConfirmation].contains(error.code): return .needsConfirmation
        case .failure(let error): return error.code == .locked ? .locked : .unavailable
        }
    }

    /// How many secrets one GetSecrets call asks for: gnome-keyring finds each path in time linear
    /// in the collection (measured: 0.6 ms a path at 6,000 items), so a chunk of 500 answers well
    /// inside the 5-s deadline up to ~50,000 items, and other operations get their turn between chunks.
    static let secretsPerRead = 500

    /// One search for the paths of every item of ours, then their secrets a chunk at a time; an
    /// item is attributed to the account its secret names (`TokenSet.keyringJSON(account:)`).
    public func loadAll(isolation: isolated (any Actor)? = #isolation) async -> Result<StoredSessions, KeyringError> {
        let paths: ItemPaths
        switch await perform(account: nil, waitsOutTheQueue: true, isolation: isolation, { client, cancellable in
            client.itemPaths(cancellable: cancellable)
        }) {
        case .success(let found): paths = found
        case .failure(let error): return .failure(error)
        }
        var sessions: [String: Result<TokenSet, KeyringError>] = [:]
        var claims: [String: Int] = [:]
        var othersMayExist = paths.locked > 0
        var start = 0
        while start < paths.unlocked.count {
            let chunk = Array(paths.unlocked[start..<min(start + Self.secretsPerRead, paths.unlocked.count)])
            start += chunk.count
            let secrets: [String: String]
            switch await perform(account: nil, waitsOutTheQueue: true, isolation: isolation, { client, cancellable in
                client.secrets(at: chunk, cancellable: cancellable)
            }) {
            case .success(let read): secrets = read
            case .failure(let error): return .failure(error)
            }
            for path in chunk {
                // Gone or locked since the search; or a secret that names no account.
                guard let secret = secrets[path], let account = TokenSet.keyringAccount(in: secret) else {
                    othersMayExist = true
                    continue
                }
                claims[account, default: 0] += 1
                sessions[account] = Result { () throws(KeyringError) in try TokenSet.decodingStored(secret) }
            }
        }
        // Two items naming one account (a copy in another collection, or one made by hand): which
        // is really its item is for the account's own read to say.
        for (account, count) in claims where count > 1 {
            sessions[account] = nil
            othersMayExist = true
        }
        return .success(StoredSessions(sessions: sessions, othersMayExist: othersMayExist))
    }

    /// `body` with the store's client, through the queue; `account` is the item it touches, if one.
    private func perform<Success: Sendable>(
        account: String?,
        waitsOutTheQueue: Bool = false,
        isolation: isolated (any Actor)?,
        _ body: @escaping @Sendable (LibsecretClient, UnsafeMutablePointer<GCancellable>) -> Result<Success, KeyringError>
    ) async -> Result<Success, KeyringError> {
        let client = self.client
        return await queue.perform(account: account, waitsOutTheQueue: waitsOutTheQueue, isolation: isolation) { cancellable in
            body(client, cancellable)
        }
    }
}
