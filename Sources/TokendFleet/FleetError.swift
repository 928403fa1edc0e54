// TokendFleet — one session shared by several tokend daemons through etcd v3 (README, "A fleet"):
// etcd's JSON gateway, the fleet's sealing key, the election of one refresher per account, and
// the provider and store wrappers the daemon gives a fleet account. Knows nothing of the engine.

import TokendCore

/// Why the fleet could not do something. Messages never carry a token, a password or a key.
public struct FleetError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Code: String, Sendable {
        /// No etcd endpoint answered within its deadline (network, TLS, quorum lost).
        case unreachable = "fleet_unreachable"
        /// etcd answered, and refused: authentication, permission (RBAC), a malformed request.
        case refused = "fleet_refused"
        /// A sealed session does not open with this member's sealing key.
        case wrongKey = "fleet_key_mismatch"
        /// A file the `[fleet]` table names cannot be used (missing, unreadable, too open, malformed).
        case badFile = "fleet_bad_file"
        /// A compare-and-swap lost: another member wrote first, or this one lost its election.
        case conflict = "fleet_conflict"
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code.rawValue): \(message)" }

    /// What a member with another key than the fleet's must do: said wherever the mismatch shows.
    public static let wrongKeySteps =
        "this member's sealing_key is not the fleet's: copy the key file from a working member (the same 32 bytes), then restart tokend (systemctl --user restart tokend); nothing was read from or written to the fleet meanwhile"

    /// Whether a refresh failed on the fleet's side (etcd, the lease, the election: every code
    /// the fleet's provider answers begins `fleet_`), not at the provider: such a backoff is not
    /// the provider's rate limit, and a session the fleet brings ends it.
    public static func isFleets(_ failure: RefreshFailure) -> Bool { failure.code.hasPrefix("fleet_") }

    /// The reason a fleet account logged out on another member gives every request here.
    public static func loggedOutElsewhere(_ account: String) -> String {
        "logged out on another member of the fleet; run: tokenctl login \(account) (on any member)"
    }
}
