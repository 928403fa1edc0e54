import TokendCore
import TokendProtocol

/// Something that happened to an account (or to all: the keyring, the configuration), as the
/// engine publishes it to watchers, hooks and systemd's status line. Never a token.
/// `kind` is the event's name as hooks and `watch` know it; the watch handler turns the rest
/// into wire text.
public struct AccountEvent: Sendable, Equatable {
    public var kind: Event.Kind
    /// Nil for an event about every account.
    public var account: String?
    public var at: Date
    public var expiresAt: Date?
    public var failure: RefreshFailure?
    public var retryAt: Date?
    /// `signed_in`, `user_changed`: how the user signed in.
    public var signInProvider: String?
    /// `signed_out`, `user_changed`: why.
    public var reason: String?
    /// `signed_in`, `user_changed`: the user's email (a watch shows it only when asked).
    public var email: String?
    /// `signed_in`: the session replaced belonged to another user (subject).
    public var replacedOtherUser = false

    public init(_ kind: Event.Kind, account: String?, at: Date) {
        self.kind = kind
        self.account = account
        self.at = at
    }
}
