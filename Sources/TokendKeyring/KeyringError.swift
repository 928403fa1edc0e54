import TokendCore

/// Why a keyring operation did not happen. Never carries a secret: the message is a GError's
/// message (libsecret and GDBus never put secret values in them) or one of ours.
public struct KeyringError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Code: String, Sendable {
        /// The item or the collection is locked; nothing was read, written or deleted.
        case locked
        /// No session bus, or no Secret Service on it.
        case unavailable
        /// The operation did not finish before its deadline (it may still finish later).
        case timedOut = "timed_out"
        /// The Secret Service answered with an error that is none of the above.
        case failed
        /// The item exists but its secret is not a token set tokend can read; it is left alone.
        case corrupt
        /// The operation waited its whole deadline behind other keyring operations and has not
        /// started: a write stays queued and still happens, anything else is dropped. Says
        /// nothing against the keyring: it is busy.
        case queued
        /// The collection is unlocked but the item is not, for us: the service wants the user to
        /// confirm this client's access first (KeePassXC's "Confirm when passwords are retrieved
        /// by clients" shows our items as locked until then). tokend never asks for that dialog.
        case needsConfirmation = "needs_confirmation"
    }

    public var code: Code
    /// The GError's domain (`g_quark_to_string`), verbatim, when the error came from GLib.
    public var domain: String?
    /// The GError's code, when the error came from GLib.
    public var gerrorCode: Int32?
    public var message: String
    /// What the user does to make a store other than the Secret Service usable again (`pass`,
    /// `tpm2`): said with the error wherever it is reported. Nil: the Secret Service's own advice.
    public var steps: String?

    public init(_ code: Code, _ message: String, domain: String? = nil, gerrorCode: Int32? = nil, steps: String? = nil) {
        self.code = code
        self.message = message
        self.steps = steps
        self.domain = domain
        self.gerrorCode = gerrorCode
    }

    public var description: String {
        var text = "keyring \(code.rawValue): \(message)"
        if let domain, let gerrorCode { text += " [\(domain) \(gerrorCode)]" }
        return text
    }
}

/// The account's state (TokendCore) reads a keyring failure through this: a corrupt item reads
/// the same next time, anything else may pass.
extension KeyringError: StoredSessionFailure {
    public var isCorrupt: Bool { code == .corrupt }
}
