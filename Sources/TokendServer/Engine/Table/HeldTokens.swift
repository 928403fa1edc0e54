import Synchronization
import TokendCore

/// The tokens each account would hand out now, readable from any thread: the event loop answers
/// a plain `token` request from here without a hop to the engine (docs/architecture.md, "The
/// held-token fast path"). `AccountTable` writes it on every change of an account, inside the
/// engine, so it never holds a session the engine has dropped: a logout clears it before its
/// reply is sent.
public final class HeldTokens: Sendable {
    struct Entry: Sendable {
        /// The tokens, the horizon past which nothing is promised, and what was promised
        /// (docs/architecture.md, "Promises").
        var promises: TokenPromises
        var defaultKind: TokenKind
    }

    private let entries = Mutex<[String: Entry]>([:])

    public init() {}

    /// The account's tokens and horizon after a change (nil: the account is gone). The promises
    /// made on the same tokens stay: only new tokens forget them.
    func set(_ account: String, tokens: TokenSet?, horizon: Date?, defaultKind: TokenKind?) {
        entries.withLock { entries in
            guard let defaultKind else { entries[account] = nil; return }
            var promises = entries[account]?.promises ?? TokenPromises()
            promises.update(tokens: tokens, horizon: horizon)
            entries[account] = Entry(promises: promises, defaultKind: defaultKind)
        }
    }

    /// A token of `kind` (the account's default kind if nil) valid for `minValid` seconds at
    /// `now` that no refresh cancels before then, or nil: then the engine decides (refresh, wait,
    /// or say why not). A token handed out is a promise the account's next refresh waits for.
    public func grant(account: String, kind: TokenKind?, minValid: Double, at now: Date) -> TokenGrant? {
        entries.withLock { entries in
            guard let defaultKind = entries[account]?.defaultKind else { return nil }
            let kind = kind ?? defaultKind
            // In place (the dictionary's modify accessor): no copy of the entry on the hot path.
            guard let held = entries[account]?.promises.grant(kind, minValid: minValid, at: now) else { return nil }
            return TokenGrant(token: held.value, kind: kind, expiresAt: held.expiresAt)
        }
    }

    /// The engine served the account's held tokens until `instant`.
    func promise(_ account: String, until instant: Date) {
        entries.withLock { $0[account]?.promises.promise(until: instant) }
    }

    /// A refresh that was not forced wants to start: nil when it may (nothing more is promised
    /// from here on), else when the latest promise ends. One step under the lock, so no grant
    /// slips in between the look and the refresh.
    func claimForRefresh(_ account: String, at now: Date) -> Date? {
        entries.withLock { $0[account]?.promises.claimForRefresh(at: now) }
    }

    /// The latest promise on the account's tokens, if it ends after `now`.
    func outstanding(_ account: String, at now: Date) -> Date? {
        entries.withLock { $0[account]?.promises.outstanding(at: now) }
    }
}
