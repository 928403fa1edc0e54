/// One account's down-scoped access tokens, one per `TokenScope`, in memory only: each is minted
/// from the account's refresh token in seconds, so the keyring holds nothing that a refresh
/// cannot rebuild (docs/architecture.md, "Scoped tokens"). Pure: clocked from outside, no I/O.
///
/// A token belongs to the session `generation` it was minted from: after a login, an import or
/// a logout the machine's generation moves on and older tokens are never served again.
public struct ScopedTokenCache: Sendable {
    public struct Entry: Sendable, Equatable {
        public var token: String
        public var expiresAt: Date
        /// When its grant was sent: with the expiry it gives the lifetime the refresh margin is a third of.
        public var issuedAt: Date
        public var generation: UInt64
        /// The last `token` request for this key: a key nobody asks for stops being refreshed.
        public var lastUsed: Date

        /// A request asked for it since it was minted: its proactive refresh is worth a grant.
        public var askedForSinceMinted: Bool { lastUsed >= issuedAt }
    }

    /// Keys per account. Each live key costs one grant at the provider per token lifetime, so a
    /// script that invents a new scope or audience per call must not turn the daemon into a grant
    /// amplifier; 16 covers an account's real APIs many times over. The least recently used goes.
    public static let maximumKeys = 16

    public private(set) var entries: [TokenScope: Entry] = [:]
    /// The last grant for a key that failed for that key only (`invalid_scope`, a wider answer),
    /// so the requests waiting on it get the reason instead of asking again.
    public private(set) var refusals: [TokenScope: (at: Date, error: TokendError)] = [:]

    /// The key whose grant holds the account's refresh slot now, if one does: an explicit
    /// refresh waits for it rather than taking its outcome for the session's.
    public var inFlight: TokenScope?

    /// Nothing minted, refused or in flight: the account never asked for a narrowed token.
    public var isEmpty: Bool { entries.isEmpty && refusals.isEmpty && inFlight == nil }

    public init() {}

    /// The held token for `key` if it is from `generation` and still valid for `minValid` seconds.
    public func token(for key: TokenScope, generation: UInt64, minValid: Double, at now: Date) -> Entry? {
        guard let entry = entries[key], entry.generation == generation, entry.expiresAt > now,
            entry.expiresAt.timeIntervalSince(now) >= minValid
        else { return nil }
        return entry
    }

    /// A request asked for `key` now: it is kept warm for one more token lifetime.
    public mutating func noteUse(of key: TokenScope, at now: Date) {
        entries[key]?.lastUsed = now
    }

    /// A fresh token for `key`. Keeps the key's last use (a proactive refresh is not a use);
    /// `requested` marks it used now. Evicts the least recently used key beyond `maximumKeys`.
    public mutating func store(_ token: String, expiresAt: Date, issuedAt: Date, for key: TokenScope, generation: UInt64, requested: Bool, at now: Date) {
        let lastUsed = requested ? now : (entries[key]?.lastUsed ?? now)
        entries[key] = Entry(token: token, expiresAt: expiresAt, issuedAt: issuedAt, generation: generation, lastUsed: lastUsed)
        refusals[key] = nil
        while entries.count > Self.maximumKeys, let oldest = entries.min(by: { $0.value.lastUsed < $1.value.lastUsed })?.key {
            entries[oldest] = nil
        }
    }

    public mutating func refuse(_ key: TokenScope, _ error: TokendError, at now: Date) {
        refusals[key] = (now, error)
        if refusals.count > Self.maximumKeys, let oldest = refusals.min(by: { $0.value.at < $1.value.at })?.key {
            refusals[oldest] = nil
        }
    }

    /// The refusal of a grant for `key` that finished at or after `since`.
    public func refusal(of key: TokenScope, since: Date) -> TokendError? {
        guard let refusal = refusals[key], refusal.at >= since else { return nil }
        return refusal.error
    }

    /// The keys whose proactive refresh is due at `now`, soonest expiry first (`kept`).
    public func due(at now: Date, generation: UInt64, policy: RefreshPolicy) -> [TokenScope] {
        kept(at: now, generation: generation, policy: policy).filter { $0.refreshAt <= now }
            .sorted { $0.entry.expiresAt < $1.entry.expiresAt }
            .map(\.key)
    }

    /// When the first of `due`'s keys becomes due, for the account's timer; nil when none will.
    public func nextDue(after now: Date, generation: UInt64, policy: RefreshPolicy) -> Date? {
        kept(at: now, generation: generation, policy: policy).map(\.refreshAt).min()
    }

    /// The tokens a proactive refresh keeps warm, with the instant each is due at the account's
    /// refresh margin: alive at `now`, of the current `generation`, and asked for since they were
    /// minted (a key unused for a whole token lifetime is left to expire).
    private func kept(at now: Date, generation: UInt64, policy: RefreshPolicy) -> [(key: TokenScope, entry: Entry, refreshAt: Date)] {
        entries.compactMap { key, entry in
            guard entry.generation == generation, entry.askedForSinceMinted, entry.expiresAt > now else { return nil }
            return (key, entry, policy.refreshAt(expiresAt: entry.expiresAt, issuedAt: entry.issuedAt, jitterDraw: 0))
        }
    }

    /// Drops tokens that expired or belong to an older session: nothing serves them any more.
    public mutating func prune(at now: Date, generation: UInt64) {
        entries = entries.filter { $0.value.generation == generation && $0.value.expiresAt > now }
    }
}
