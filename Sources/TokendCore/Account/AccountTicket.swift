/// What an account issues to each asynchronous operation it starts — a refresh or scoped grant,
/// a keyring read, a login, an upgrade, a deletion, a logout — and what the operation's result
/// shows when it comes back: the one ticket of an account. Whether a result may still be applied
/// is decided by the engine's `AccountState.changes(since:)` (each caller names the changes that void
/// its result) and, for a refresh, again by `AccountMachine` against its phase.
public struct AccountTicket: Sendable, Equatable {
    /// The account's life: a reload that removes and adds it again starts a new incarnation.
    public internal(set) var incarnation: UInt64
    /// The endpoint the account pointed at: a session belongs to the endpoint that issued it.
    public internal(set) var endpoint: String
    /// The machine's session generation (`AccountMachine.generation`).
    public internal(set) var generation: UInt64
    /// The user action this operation is (numbered as issued), or for other operations the last
    /// one issued when it began.
    public internal(set) var userAction: UInt64
    /// A refresh's (or grant's): the refresh token it presented. Nil for other operations.
    public internal(set) var refreshToken: String?
    /// A refresh's: when the request went out; the new tokens' lifetimes count from here.
    public internal(set) var startedAt: Date?
    /// A refresh that is a grant of a token narrowed to this scope (AccountState+Serving.swift).
    public internal(set) var narrowedTo: TokenScope?
    /// The grant was asked for by a `token` request now, not by the recheck ahead of need.
    public internal(set) var requested: Bool

    public init(
        incarnation: UInt64 = 0, endpoint: String = "", generation: UInt64 = 0, userAction: UInt64 = 0, refreshToken: String? = nil,
        startedAt: Date? = nil, narrowedTo: TokenScope? = nil, requested: Bool = false
    ) {
        self.incarnation = incarnation
        self.endpoint = endpoint
        self.generation = generation
        self.userAction = userAction
        self.refreshToken = refreshToken
        self.startedAt = startedAt
        self.narrowedTo = narrowedTo
        self.requested = requested
    }

    /// Whether this is a refresh's (or grant's) ticket, which `AccountMachine.startRefresh` issued.
    public var isRefresh: Bool { startedAt != nil && refreshToken != nil }
}
