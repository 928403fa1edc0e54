import FoundationEssentials
import Logging
import TokendCore

/// What the fleet holds for an account, as this member last read or wrote it: the session its
/// engine holds, by the etcd revision that wrote it.
struct KnownSession: Sendable, Equatable {
    var revision: Int64
    var tokens: TokenSet

    init(_ tokens: TokenSet, revision: Int64) {
        self.revision = revision
        self.tokens = tokens
    }

    var refreshToken: String { tokens.refreshToken }

    /// Whether `other` is this session (expiries aside: each member computes its own).
    func matches(_ other: TokenSet) -> Bool {
        tokens.refreshToken == other.refreshToken && tokens.idToken == other.idToken && tokens.accessToken == other.accessToken
    }
}

/// An account's session in etcd, or its absence.
public enum FleetRead: Sendable {
    case session(TokenSet, revision: Int64)
    case none
}

/// What the watch saw another member do to an account's session.
public enum FleetChange: Sendable {
    /// A new session (a refresh, a login or an import elsewhere): held from now on.
    case put(TokenSet)
    /// A logout elsewhere: forgotten here too.
    case deleted
}

/// This daemon's membership of the fleet: its lease, its elections (one key per account, created
/// under the lease: etcd's election pattern), the sessions it knows and the watch that tells it
/// of new ones. One per daemon; the accounts with `fleet = true` go through it.
public actor FleetMember {
    public nonisolated let settings: FleetSettings
    nonisolated let client: EtcdClient
    /// Read again on every reload: a member given the wrong key is fixed without a restart.
    var sealer: FleetSealer
    nonisolated let clock: any WallClock
    nonisolated let timers: any TimerSource
    nonisolated let logger: Logger
    /// Written into the election keys: who holds an account, for people reading etcd.
    public nonisolated let memberID: String

    /// The lease and the holder's own deadline, in steady seconds: the last keep-alive's send
    /// time plus its TTL less `leaseMargin`. Past it this member refreshes nothing.
    var lease: (id: Int64, deadline: Double)? {
        didSet { if lease != nil { wake(.lease) } }
    }
    var known: [String: KnownSession] = [:]
    /// Each fleet account's endpoint, for the associated data of its sealed session.
    var endpoints: [String: String] = [:]
    var waiters: [UInt64: (topic: WaitTopic, continuation: CheckedContinuation<Void, Never>)] = [:]
    var nextWaiter: UInt64 = 0
    var onChange: (@Sendable (String, FleetChange) async -> Void)?
    var loops: [Task<Void, Never>] = []
    /// The last revision the watch saw: a new watch starts after it, so no change is missed.
    var watchRevision: Int64 = 0
    /// Whether the last call to etcd got through (logged when it changes).
    var reachable = true
    /// Accounts whose sealed session did not open here, logged once each.
    var unreadable: Set<String> = []
    /// Accounts whose holder refresh could not be written (etcd unreachable), by the revision it
    /// read: the engine's keyring write tries again, with that compare-and-swap.
    var unwritten: [String: Int64] = [:]
    /// The last refresh tokens each account had in the fleet, as hashes (this process's): a
    /// keyring write-back of one of them is an older session, never written over a newer one.
    var seen: [String: [Int]] = [:]
    /// Enough to cover the write-backs a busy keyring can still have queued after many rotations.
    static let seenPerAccount = 16

    /// A holder starts a refresh only with at least this long before its own deadline: the
    /// provider's answer takes well under a second normally, and a refresh cut short by the
    /// deadline is the one window left (README, "A fleet").
    static let minimumRefreshBudget: Double = 2
    /// Members' wall clocks agree within this (NTP keeps them within milliseconds): a session
    /// another member wrote is taken as expiring this much earlier than it says.
    public static let clockSkewAllowance: Double = 2

    public init(settings: FleetSettings, client: EtcdClient, sealer: FleetSealer, clock: any WallClock, timers: any TimerSource, logger: Logger, memberID: String) {
        self.settings = settings
        self.client = client
        self.sealer = sealer
        self.clock = clock
        self.timers = timers
        self.logger = logger
        self.memberID = memberID
    }

    // MARK: - Keys

    nonisolated var prefix: [UInt8] { Array(settings.prefix.utf8) }
    nonisolated func sessionKey(_ account: String) -> [UInt8] { prefix + Array("session/\(account)".utf8) }
    nonisolated func holderKey(_ account: String) -> [UInt8] { prefix + Array("holder/\(account)".utf8) }

    func endpoint(of account: String) -> String { endpoints[account] ?? "" }

    // MARK: - Life

    /// Starts the lease and the watch; `onChange` hears what other members do to the accounts.
    public func start(accounts: [String: String], onChange: @escaping @Sendable (String, FleetChange) async -> Void) {
        endpoints = accounts
        self.onChange = onChange
        guard loops.isEmpty else { return }
        loops.append(Task { await self.keepLease() })
        loops.append(Task { await self.watchSessions() })
    }

    /// The fleet accounts and their endpoints, and the sealing key as read again, after a reload.
    public func reconfigure(accounts: [String: String], sealer: FleetSealer) {
        endpoints = accounts
        self.sealer = sealer
        unreadable = []
    }

    /// Stops the loops. The lease is left to expire: a refresh in flight may still be writing.
    public func stop() async {
        for loop in loops { loop.cancel() }
        loops = []
        for (_, waiter) in waiters { waiter.continuation.resume() }
        waiters = [:]
        await client.shutdown()
    }

    func note(_ error: FleetError?) {
        let now = error == nil || error?.code != .unreachable
        guard now != reachable else { return }
        reachable = now
        if let error {
            logger.error("fleet unreachable: tokens held are served while valid, nothing is refreshed", metadata: ["error": "\(error)"])
        } else {
            logger.notice("fleet reachable again")
        }
    }

    // MARK: - Sessions

    /// The account's session in etcd (a linearizable read).
    public func read(_ account: String) async throws(FleetError) -> FleetRead {
        let answer: EtcdRangeAnswer
        do throws(FleetError) {
            answer = try await client.range(sessionKey(account))
            note(nil)
        } catch {
            note(error)
            throw error
        }
        guard let kv = answer.kvs?.first else { return .none }
        do throws(FleetError) {
            let tokens = try sealer.open(kv.valueBytes, account: account, endpoint: endpoint(of: account))
            unreadable.remove(account)
            saw(tokens.refreshToken, account: account)
            return .session(tokens, revision: kv.mod_revision?.value ?? 0)
        } catch {
            if unreadable.insert(account).inserted { logger.error("\(error.message)", metadata: ["account": "\(account)"]) }
            throw error
        }
    }

    /// Notes that `refreshToken` was the account's in the fleet.
    func saw(_ refreshToken: String, account: String) {
        var hashes = seen[account] ?? []
        let hash = refreshToken.hashValue
        guard !hashes.contains(hash) else { return }
        hashes.append(hash)
        if hashes.count > Self.seenPerAccount { hashes.removeFirst() }
        seen[account] = hashes
    }

    func wasSeen(_ refreshToken: String, account: String) -> Bool {
        seen[account]?.contains(refreshToken.hashValue) ?? false
    }

    /// The session this member's engine now holds is the fleet's at `revision`.
    public func noteHeld(_ tokens: TokenSet, account: String, revision: Int64) {
        known[account] = KnownSession(tokens, revision: revision)
    }

    /// Whether `tokens` is the fleet session this member knows (then only its local copy is written).
    public func isKnown(_ tokens: TokenSet, account: String) -> Bool {
        known[account]?.matches(tokens) ?? false
    }

    /// Writes `tokens` as the account's session, if the session key is still at `revision` (0:
    /// absent) and, for a holder's refresh, this member still holds the election; `electing`:
    /// in the same transaction, the election is this member's under that lease if nobody holds it.
    @discardableResult
    func write(_ tokens: TokenSet, account: String, expecting revision: Int64, asHolder: Bool, electing: Int64? = nil) async throws(FleetError) -> Int64 {
        let key = sessionKey(account).base64
        var compare = [EtcdCompare(key: key, target: "MOD", mod_revision: EtcdNumber(revision))]
        if asHolder {
            guard let lease else { throw FleetError(.conflict, "this member's lease expired before the refreshed session could be written") }
            compare.append(EtcdCompare(key: holderKey(account).base64, target: "LEASE", lease: EtcdNumber(lease.id)))
        }
        let value = try sealer.seal(tokens, account: account, endpoint: endpoint(of: account))
        saw(tokens.refreshToken, account: account)
        // Known before it is sent, at the revision it replaces: the watch may bring this very
        // write before the answer does, and must not hand it to the engine as another member's.
        let previous = known[account]
        let pending = KnownSession(tokens, revision: revision)
        known[account] = pending
        func undo() { if known[account] == pending { known[account] = previous } }
        let answer: EtcdTxnAnswer
        do throws(FleetError) {
            var success = [EtcdRequestOp(request_put: EtcdPut(key: key, value: value.base64))]
            if let electing { success.append(EtcdRequestOp(request_txn: EtcdNestedTxn(elect(account, under: electing)))) }
            answer = try await client.txn(EtcdTxnRequest(compare: compare, success: success, failure: []))
            note(nil)
        } catch {
            note(error)
            undo()
            throw error
        }
        guard answer.succeeded == true, let written = answer.header?.revision?.value else {
            undo()
            throw FleetError(.conflict, "the fleet's session for account \"\(account)\" changed since this member read it")
        }
        if var held = known[account], held.matches(tokens) {
            held.revision = max(held.revision, written)
            known[account] = held
        }
        return written
    }

    /// A session the user gave on this member (a login, an import): the fleet's from now on,
    /// and its election this member's if nobody holds it (README, "Who refreshes a shared
    /// account"): the others then follow instead of racing it for the first refresh.
    /// Refused when the session it replaces does not open with this member's key.
    public func give(_ tokens: TokenSet, account: String) async throws(FleetError) {
        let current: Int64
        switch try await read(account) {
        case .none: current = 0
        case .session(_, let revision): current = revision
        }
        // Only a lease alive at etcd (its own deadline is earlier): a put under an expired one
        // would fail the whole transaction.
        let lease = await grantedLease().flatMap { $0.deadline > clock.steadySeconds() ? $0.id : nil }
        try await write(tokens, account: account, expecting: current, asHolder: false, electing: lease)
    }

    /// Removes the fleet's session if it is still the one this member knows (with that refresh
    /// token, when given): a logout here, or a session the provider ended.
    public func delete(_ account: String, ifRefreshToken: String?) async throws(FleetError) {
        guard let held = known[account], ifRefreshToken == nil || held.refreshToken == ifRefreshToken else { return }
        let key = sessionKey(account).base64
        do throws(FleetError) {
            _ = try await client.txn(EtcdTxnRequest(
                compare: [EtcdCompare(key: key, target: "MOD", mod_revision: EtcdNumber(held.revision))],
                success: [EtcdRequestOp(request_delete_range: EtcdKeyOnly(key: key))], failure: []))
            note(nil)
        } catch {
            note(error)
            throw error
        }
        known[account] = nil
    }
}
