import Synchronization
import TokendCore

/// The tokens each account would hand out now, readable from any thread: the event loop answers
/// a plain `token` request from here without a hop to the engine (docs/architecture.md, "The
/// held-token fast path"). `AccountTable` writes it on every change of an account, inside the
/// engine, so it never holds a session the engine has dropped: a logout clears it before its
/// reply is sent.
public final class HeldTokens: Sendable {
    struct Entry: Sendable {
        var tokens: TokenSet?
        var defaultKind: TokenKind
    }

    private let entries = Mutex<[String: Entry]>([:])

    public init() {}

    func set(_ account: String, _ entry: Entry?) {
        entries.withLock { $0[account] = entry }
    }

    /// A token of `kind` (the account's default kind if nil) valid for `minValid` seconds at
    /// `now`, or nil: then the engine decides (refresh, wait, or say why not).
    public func grant(account: String, kind: TokenKind?, minValid: Double, at now: Date) -> TokenGrant? {
        entries.withLock { entries in
            guard let entry = entries[account] else { return nil }
            let kind = kind ?? entry.defaultKind
            guard let held = entry.tokens?.token(kind, validFor: minValid, at: now) else { return nil }
            return TokenGrant(token: held.value, kind: kind, expiresAt: held.expiresAt)
        }
    }
}
