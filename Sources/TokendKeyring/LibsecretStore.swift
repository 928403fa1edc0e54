import CLibsecret
import Dispatch
import TokendCore

/// The Secret Service (GNOME keyring) through libsecret: one item per account, attributes
/// `application = tokend`, `account = NAME`, the secret the account's `TokenSet` as JSON.
///
/// Every libsecret call runs on the store's own thread, in the order the calls were made; each
/// operation answers by its deadline, `.timedOut` if the Secret Service has not (the call is then
/// cancelled, and the thread carries on with the next job). libsecret talks to the session bus of
/// the process (`DBUS_SESSION_BUS_ADDRESS` when it first connects); use one store per process.
public final class LibsecretStore: SecretStore {
    /// Per-operation deadline, in seconds. The default, 5 s: a healthy gnome-keyring answers in
    /// milliseconds and is D-Bus-activated in well under a second (measured here: ~0.2 s), while a
    /// request waiting on the keyring should fail soon enough for its client to retry.
    public let timeout: Double
    private let client: LibsecretClient
    private let thread: KeyringThread

    public init(timeout: Double = 5) {
        self.timeout = timeout
        let client = LibsecretClient()
        self.client = client
        thread = KeyringThread(name: "tokend-keyring", tearDown: { client.close() })
    }

    deinit { thread.stop() }

    public func load(account: String, isolation: isolated (any Actor)? = #isolation) async -> Result<TokenSet?, KeyringError> {
        await perform(isolation: isolation) { client, cancellable in
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
        return await perform(isolation: isolation) { client, cancellable in
            client.save(json, account: account, cancellable: cancellable)
        }
    }

    public func delete(account: String, ifRefreshToken: String?, isolation: isolated (any Actor)? = #isolation) async -> Result<Bool, KeyringError> {
        await perform(isolation: isolation) { client, cancellable in
            client.delete(account: account, ifRefreshToken: ifRefreshToken, cancellable: cancellable)
        }
    }

    public func accounts(isolation: isolated (any Actor)? = #isolation) async -> Result<[String], KeyringError> {
        await perform(isolation: isolation) { client, cancellable in
            client.accounts(cancellable: cancellable)
        }
    }

    public func state(isolation: isolated (any Actor)? = #isolation) async -> KeyringState {
        let result = await perform(isolation: isolation) { client, cancellable in
            client.state(cancellable: cancellable)
        }
        switch result {
        case .success(let state): return state
        case .failure(let error): return error.code == .locked ? .locked : .unavailable
        }
    }

    /// Queues `body` on the keyring thread before the first suspension (so the order of calls
    /// from one actor is kept) and waits for its result or the deadline, whichever comes first.
    private func perform<Success: Sendable>(
        isolation: isolated (any Actor)?,
        _ body: @escaping @Sendable (LibsecretClient, UnsafeMutablePointer<GCancellable>) -> Result<Success, KeyringError>
    ) async -> Result<Success, KeyringError> {
        let deadline = DispatchTime.now() + timeout
        let timedOut = KeyringError(.timedOut, "the Secret Service did not answer within \(timeout) s")
        let client = self.client
        return await withCheckedContinuation(isolation: isolation) { continuation in
            let pending = PendingOperation(continuation)
            thread.enqueue(
                KeyringThread.Job(
                    deadline: deadline,
                    run: {
                        let cancellable = CancellableHandle()
                        guard pending.begin(cancellable) else { return }
                        pending.finish(body(client, cancellable.pointer))
                    },
                    expire: { pending.expire(timedOut) }))
            DispatchQueue.global().asyncAfter(deadline: deadline) { pending.expire(timedOut) }
        }
    }
}
