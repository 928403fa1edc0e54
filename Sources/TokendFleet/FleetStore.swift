import Synchronization
import TokendCore
import TokendKeyring

/// Which member serves which accounts: set by the daemon when it reads its configuration.
public final class FleetBinding: Sendable {
    struct Bound: Sendable {
        var member: FleetMember?
        var accounts: Set<String> = []
    }

    let bound = Mutex(Bound())

    public init() {}

    public var member: FleetMember? { bound.withLock { $0.member } }

    /// The member an account goes through; nil for an account that stays local.
    public func member(for account: String) -> FleetMember? {
        bound.withLock { $0.accounts.contains(account) ? $0.member : nil }
    }

    public func bind(_ member: FleetMember?, accounts: Set<String>) {
        bound.withLock { $0 = Bound(member: member, accounts: member == nil ? [] : accounts) }
    }
}

/// The keyring as a fleet account sees it: its session is the fleet's (etcd), with the local
/// store's copy kept beside it, so that a restart while etcd is unreachable still serves what is
/// valid. Accounts that stay local go straight to the local store, unchanged.
public final class FleetStore: SecretStore {
    let local: any SecretStore
    let binding: FleetBinding

    public init(_ local: any SecretStore, binding: FleetBinding) {
        self.local = local
        self.binding = binding
    }

    /// What to do about a failed fleet write: the local store's own words for the engine.
    static func keyringError(_ error: FleetError) -> KeyringError {
        KeyringError(error.code == .unreachable ? .unavailable : .failed, error.message,
            steps: error.code == .wrongKey ? FleetError.wrongKeySteps : "tokend writes it to the fleet once etcd answers; tokenctl status shows the fleet's state")
    }

    public func load(account: String, isolation: isolated (any Actor)?) async -> Result<TokenSet?, KeyringError> {
        guard let member = binding.member(for: account) else { return await local.load(account: account, isolation: isolation) }
        do throws(FleetError) {
            switch try await member.read(account) {
            case .session(let tokens, let revision):
                let held = FleetMember.skewed(tokens)
                await member.noteHeld(held, account: account, revision: revision)
                return .success(held)
            case .none:
                // The first member with the account: what it held alone becomes the fleet's.
                let stored = await local.load(account: account, isolation: isolation)
                if case .success(let tokens?) = stored { try? await member.store(tokens, account: account) }
                return stored
            }
        } catch {
            // A wrong key: the account says so (with the steps) and holds nothing, as for a store
            // that cannot be used; nothing is written anywhere.
            if error.code == .wrongKey {
                return .failure(KeyringError(.failed, "the fleet's session for account \"\(account)\" does not open with this member's sealing_key", steps: FleetError.wrongKeySteps))
            }
            // Unreachable: the local copy, served while valid; refreshes say why there are none.
            // No local copy (a member restarted while etcd is away) is not "nothing stored",
            // which would ask for a login: the fleet may hold a session, read once etcd answers.
            let stored = await local.load(account: account, isolation: isolation)
            if case .success(nil) = stored { return .failure(Self.keyringError(error)) }
            return stored
        }
    }

    public func save(_ tokens: TokenSet, account: String, isolation: isolated (any Actor)?) async -> Result<Void, KeyringError> {
        guard let member = binding.member(for: account) else { return await local.save(tokens, account: account, isolation: isolation) }
        do throws(FleetError) {
            try await member.store(tokens, account: account)
        } catch {
            // Kept locally all the same: a restart must not lose a session the provider issued.
            _ = await local.save(tokens, account: account, isolation: isolation)
            return .failure(Self.keyringError(error))
        }
        return await local.save(tokens, account: account, isolation: isolation)
    }

    public func delete(account: String, ifRefreshToken: String?, isolation: isolated (any Actor)?) async -> Result<Bool, KeyringError> {
        if let member = binding.member(for: account) {
            do throws(FleetError) {
                try await member.delete(account, ifRefreshToken: ifRefreshToken)
            } catch {
                return .failure(Self.keyringError(error))
            }
        }
        return await local.delete(account: account, ifRefreshToken: ifRefreshToken, isolation: isolation)
    }

    public func accounts(isolation: isolated (any Actor)?) async -> Result<[String], KeyringError> {
        await local.accounts(isolation: isolation)
    }

    public func state(isolation: isolated (any Actor)?) async -> KeyringState {
        await local.state(isolation: isolation)
    }

    /// The local store's bulk read, less the fleet accounts: each of those is read from etcd.
    public func loadAll(isolation: isolated (any Actor)?) async -> Result<StoredSessions, KeyringError> {
        let all = await local.loadAll(isolation: isolation)
        let fleet = binding.bound.withLock { $0.member == nil ? [] : $0.accounts }
        guard !fleet.isEmpty else { return all }
        return all.map { stored in
            StoredSessions(sessions: stored.sessions.filter { !fleet.contains($0.key) }, othersMayExist: true)
        }
    }

    public func kind(of account: String) -> StoreKind? {
        local.kind(of: account)
    }

    /// Each local store's own mood, so that one store's trouble shows on its accounts only.
    public func states(isolation: isolated (any Actor)?) async -> [StoreKind?: KeyringState] {
        await local.states(isolation: isolation)
    }

    /// The local stores' router: a fleet account's local copy moves between stores like any other.
    public var router: StoreRouter? { local.router }
}
