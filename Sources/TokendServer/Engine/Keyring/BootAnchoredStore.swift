import TokendCore
import TokendKeyring
import TokendSystem

/// The daemon's keyring, with each item's times anchored to the boot clock (`BootAnchor`): a
/// stored session read back after a restart is dated by how long ago it was really issued, not
/// by a wall clock that may have been set back since it was written.
///
/// A decorator, so the engine never sees anchors: it saves and loads token sets on its own
/// clock as before. Each method calls the wrapped store before its first suspension, keeping the
/// ordering guarantee of `SecretStore`.
final class BootAnchoredStore: SecretStore {
    let wrapped: any SecretStore
    let clock: any WallClock
    let bootID: String
    let bootSeconds: @Sendable () -> Double

    init(_ wrapped: any SecretStore, clock: any WallClock, bootID: String = BootAnchoredStore.currentBootID(), bootSeconds: @escaping @Sendable () -> Double = SystemWallClock.bootSeconds) {
        self.wrapped = wrapped
        self.clock = clock
        self.bootID = bootID
        self.bootSeconds = bootSeconds
    }

    var reading: BootReading { BootReading(id: bootID, seconds: bootSeconds()) }

    func load(account: String, isolation: isolated (any Actor)?) async -> Result<TokenSet?, KeyringError> {
        let loaded = await wrapped.load(account: account, isolation: isolation)
        let now = clock.now()
        let boot = reading
        return loaded.map { $0?.restored(now: now, boot: boot) }
    }

    func save(_ tokens: TokenSet, account: String, isolation: isolated (any Actor)?) async -> Result<Void, KeyringError> {
        await wrapped.save(bootID.isEmpty ? tokens : tokens.anchored(now: clock.now(), boot: reading), account: account, isolation: isolation)
    }

    func delete(account: String, ifRefreshToken: String?, isolation: isolated (any Actor)?) async -> Result<Bool, KeyringError> {
        await wrapped.delete(account: account, ifRefreshToken: ifRefreshToken, isolation: isolation)
    }

    func accounts(isolation: isolated (any Actor)?) async -> Result<[String], KeyringError> {
        await wrapped.accounts(isolation: isolation)
    }

    func state(isolation: isolated (any Actor)?) async -> KeyringState {
        await wrapped.state(isolation: isolation)
    }

    func states(isolation: isolated (any Actor)?) async -> [StoreKind?: KeyringState] {
        await wrapped.states(isolation: isolation)
    }

    func kind(of account: String) -> StoreKind? { wrapped.kind(of: account) }

    func loadAll(isolation: isolated (any Actor)?) async -> Result<StoredSessions, KeyringError> {
        let loaded = await wrapped.loadAll(isolation: isolation)
        let now = clock.now()
        let boot = reading
        return loaded.map { read in
            StoredSessions(sessions: read.sessions.mapValues { $0.map { $0.restored(now: now, boot: boot) } }, othersMayExist: read.othersMayExist)
        }
    }

    /// The kernel's id of this boot; empty if unreadable, and then no anchor ever matches (the
    /// cautious fallback of `TokenSet.restored`).
    static func currentBootID() -> String {
        let text = (try? String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8)) ?? ""
        return text.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

extension BootAnchoredStore {
    /// The router behind, for a move between its stores; nil: one store (a test's double).
    var router: StoreRouter? { wrapped.router }

    /// The same decorator over one of the router's stores, whatever the account's own is: a
    /// move writes and reads the target and removes the source with the anchors a restore expects.
    func only(_ kind: StoreKind) -> BootAnchoredStore? {
        router.map { BootAnchoredStore($0.store(kind), clock: clock, bootID: bootID, bootSeconds: bootSeconds) }
    }
}
