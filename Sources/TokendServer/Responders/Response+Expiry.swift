import TokendCore
import TokendProtocol

extension Response {
    /// A reply about `account`'s session: its name, and when the token expires (`expires_at`,
    /// and `expires_in` in whole seconds from `now`) if that is known.
    mutating func describeSession(account: String, expiresAt: Date?, now: Date) {
        self.account = account
        if let expiresAt {
            self.expiresAt = Timestamp.format(expiresAt)
            expiresIn = Int(saturating: expiresAt.timeIntervalSince(now).rounded(.down))
        }
    }
}
