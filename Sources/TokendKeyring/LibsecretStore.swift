import CLibsecret
import TokendCore

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
            name: "tokend-keyring", timeout: timeout, clock: clock, timers: timers ?? DispatchTimerSource(clock: clock),
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
            json = try tokens.keyringJSON()
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
        case .failure(let error): return error.code == .locked ? .locked : .unavailable
        }
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
