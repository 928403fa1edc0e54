/// When to refresh a session before it expires (docs/architecture.md, "Refresh policy").
public struct RefreshPolicy: Sendable, Equatable {
    /// Default margin: the Firebase SDKs refresh 5 minutes before expiry, and so do we.
    public static let defaultRefreshBefore: Double = 300
    /// Jitter is at most this share of the margin, so many accounts do not refresh in one second.
    public static let jitterShare: Double = 0.10

    public var refreshBefore: Double
    /// The longest `min_valid` of the account's token files: a file is removed that long before
    /// its token expires, so the refresh comes that much earlier too (docs/architecture.md,
    /// "Token files"). Zero without token files.
    public var fileMinValid: Double

    public init(refreshBefore: Double = RefreshPolicy.defaultRefreshBefore, fileMinValid: Double = 0) {
        self.refreshBefore = refreshBefore
        self.fileMinValid = fileMinValid
    }

    /// `min(refresh_before, lifetime / 3)`: a short-lived token gets refreshed with a third of its
    /// life left rather than immediately after it is minted. A token file's `min_valid` adds up
    /// to another third, so a refresh still leaves a third of the life between two refreshes.
    public func margin(lifetime: Double) -> Double {
        max(0, min(refreshBefore, lifetime / 3)) + max(0, min(fileMinValid, lifetime / 3))
    }

    /// The margin for a token issued at `issuedAt`; with no issue time known, as if it lived
    /// three times the longer of its two parts (so neither is cut: `refresh_before` plus the
    /// files' `min_valid`).
    public func margin(expiresAt: Date, issuedAt: Date?) -> Double {
        margin(lifetime: issuedAt.map { expiresAt.timeIntervalSince($0) } ?? max(refreshBefore, fileMinValid) * 3)
    }

    /// When a proactive refresh should start, and how much earlier it may be moved to part it
    /// from other accounts' refreshes: the one place the margin is computed.
    public func window(expiresAt: Date, issuedAt: Date?, jitterDraw: Double) -> RefreshWindow {
        let margin = margin(expiresAt: expiresAt, issuedAt: issuedAt)
        // Jitter moves the refresh earlier, never later, so it can never push past the margin.
        let jitter = margin * Self.jitterShare * min(max(jitterDraw, 0), 1)
        let desired = expiresAt.addingTimeInterval(-(margin + jitter))
        return RefreshWindow(desired: desired, earliest: desired.addingTimeInterval(-margin))
    }

    /// The proactive refresh instant: `expiresAt - margin - jitter`, `jitterDraw` drawn from [0, 1).
    public func refreshAt(expiresAt: Date, issuedAt: Date?, jitterDraw: Double) -> Date {
        window(expiresAt: expiresAt, issuedAt: issuedAt, jitterDraw: jitterDraw).desired
    }
}

/// A proactive refresh's instant and the earliest it may be moved to: spreading moves a refresh
/// earlier (never later, which would eat into the margin), by at most one margin.
public struct RefreshWindow: Sendable, Equatable {
    public var desired: Date
    public var earliest: Date

    public init(desired: Date, earliest: Date) {
        self.desired = desired
        self.earliest = earliest
    }
}

/// How long to wait after consecutive transient failures (docs/architecture.md, "Refresh policy").
///
/// Exponential with full jitter: the n-th retry waits a uniform draw from [0, base·2ⁿ], clamped
/// to the cap. The window stops growing at `windowLimit`, so once at the cap about three retries
/// in four wait the full cap and one in four still spreads out: ≈ 13.7 requests an hour during a
/// long outage (the design's "~15 an hour"), while accounts never fall back into lock-step.
public struct Backoff: Sendable, Equatable {
    /// First retry within a second: most blips (a dropped connection, one 503) are that short.
    public static let base: Double = 1
    /// Never wait more than 5 minutes between tries: a 1-hour token still gets ~11 chances.
    public static let cap: Double = 300
    /// The jitter window's limit (4 × cap): see the type's comment for the arithmetic.
    public static let windowLimit: Double = 4 * cap
    /// A `Retry-After` is honoured up to an hour; a server asking for more is treated as broken.
    public static let retryAfterLimit: Double = 3600

    public init() {}

    /// The delay before retry number `attempt` (0 for the first retry), `jitterDraw` drawn from [0, 1).
    public func delay(attempt: Int, jitterDraw: Double, retryAfter: Double? = nil) -> Double {
        let exponent = min(max(attempt, 0), 30)  // 2^30 s is far past windowLimit; no overflow
        let window = min(Self.base * Double(1 << exponent), Self.windowLimit)
        let jittered = min(window * min(max(jitterDraw, 0), 1), Self.cap)
        guard let retryAfter, retryAfter > 0 else { return jittered }
        return max(jittered, min(retryAfter, Self.retryAfterLimit))
    }
}
