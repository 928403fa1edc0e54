/// What the clients holding an account's current tokens were promised, and when a refresh may
/// therefore start (docs/architecture.md, "Refresh policy", "Promises").
///
/// A token served with `min_valid` V promises the client V seconds of use. Some providers
/// (django-oauth-toolkit, and others that revoke on rotation) delete the old access token when
/// they refresh, so a refresh inside a promise breaks it. Two rules keep every promise:
/// - nothing is promised past the `horizon`, the instant the proactive refresh may start at the
///   latest (so promises never hold the proactive refresh later than its margin allows), and
///   nothing at all while a refresh is starting or in flight;
/// - a refresh the user did not force starts no earlier than the latest promise (`until`).
///
/// One value per account, kept under the held-token table's lock: the fast path's grant and the
/// engine's claim for a refresh are then one atomic step each.
public struct TokenPromises: Sendable, Equatable {
    public private(set) var tokens: TokenSet?
    /// Serve nothing whose promise ends after this; nil: only the tokens' own expiry bounds it.
    public private(set) var horizon: Date?
    /// The latest instant a client was promised the current tokens would still be valid.
    public private(set) var until: Date?

    public init(tokens: TokenSet? = nil, horizon: Date? = nil) {
        self.tokens = tokens
        self.horizon = horizon
    }

    /// The account changed: new tokens forget the old tokens' promises (those are broken or kept
    /// already: the refresh that brought the new ones waited for them); the same tokens keep them.
    public mutating func update(tokens: TokenSet?, horizon: Date?) {
        if !Self.sameServed(self.tokens, tokens) { until = nil }
        self.tokens = tokens
        self.horizon = horizon
    }

    /// A token of `kind` valid for `minValid` seconds at `now` that no refresh will cancel before
    /// then, recording the promise; nil when none is (the engine then refreshes or waits).
    public mutating func grant(_ kind: TokenKind, minValid: Double, at now: Date) -> (value: String, expiresAt: Date)? {
        guard let held = tokens?.token(kind, validFor: minValid, at: now, horizon: horizon) else { return nil }
        promise(until: now.addingTimeInterval(max(0, minValid)))
        return held
    }

    /// Records a promise made elsewhere (the engine served from the same tokens).
    public mutating func promise(until instant: Date) {
        until = max(until ?? instant, instant)
    }

    /// A refresh that was not forced wants to start at `now`: nil when it may (and from now on
    /// nothing more is promised, until the account's next change says otherwise), else the
    /// instant the latest promise ends, when it may.
    public mutating func claimForRefresh(at now: Date) -> Date? {
        if let until = outstanding(at: now) { return until }
        horizon = .distantPast
        return nil
    }

    /// The latest promise, if it ends after `now`.
    public func outstanding(at now: Date) -> Date? {
        guard let until, until > now else { return nil }
        return until
    }

    /// Whether two token sets serve the same tokens (a keyring write-back or a phase change keeps
    /// them; a refresh, login or import replaces them).
    static func sameServed(_ a: TokenSet?, _ b: TokenSet?) -> Bool {
        a?.accessToken == b?.accessToken && a?.idToken == b?.idToken
    }
}

extension TokenSet {
    /// The token of a kind valid for `minValid` seconds at `now` whose promise ends no later than
    /// `horizon` (when given): the one rule for handing a held token out.
    public func token(_ kind: TokenKind, validFor minValid: Double, at now: Date, horizon: Date?) -> (value: String, expiresAt: Date)? {
        guard let held = token(kind, validFor: minValid, at: now) else { return nil }
        if let horizon, now.addingTimeInterval(max(0, minValid)) > horizon { return nil }
        return held
    }
}
