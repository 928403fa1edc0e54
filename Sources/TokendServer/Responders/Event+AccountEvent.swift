import TokendCore
import TokendProtocol

extension Event {
    /// The line `watch` writes for an event; the email only for a client that asked for the profile.
    init(_ event: AccountEvent, profile: Bool) {
        self.init(event: event.kind, account: event.account, at: Timestamp.format(event.at))
        expiresAt = event.expiresAt.map(Timestamp.format)
        error = event.failure
        retryAt = event.retryAt.map(Timestamp.format)
        signInProvider = event.signInProvider
        reason = event.reason
        email = profile ? event.email : nil
        replacedOtherUser = event.replacedOtherUser ? true : nil
    }
}
