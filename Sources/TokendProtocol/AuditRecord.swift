import TokendCore

/// One line of tokend's audit (README, "Audit"; issue 49 item 2): who asked for what, through
/// which socket, and what it got. Written by the daemon as JSON Lines, read by `tokenctl audit`.
/// Never a token, a refresh token, a fingerprint of one, or anything a client sent as a secret:
/// names, kinds, codes and the peer's identity as the kernel reports it.
public struct AuditRecord: Codable, Sendable, Equatable {
    /// RFC 3339, UTC, to the second: when the request was answered (the first of a fold).
    public var time: String
    /// `main` for the main socket, else the consumer's name (`[consumer.NAME]`).
    public var consumer: String
    /// The op (`token`, `login`, …), `accept` for a peer refused at accept, `proxy` for a request
    /// the consumer's proxy forwarded.
    public var op: String
    public var account: String?
    public var kind: String?
    public var audience: String?
    public var scope: String?
    /// The origin a proxied request went to (`https://api.example.com`); never its path or query.
    public var upstream: String?
    /// `ok`, or the error code answered (`forbidden`, `unknown_account`, `needs_login`, …).
    public var outcome: String
    /// What a refusal said (the daemon's own words; never a secret).
    public var reason: String?
    /// The peer as SO_PEERCRED saw it when it connected, in tokend's pid namespace.
    public var pid: Int32?
    public var uid: UInt32?
    /// /proc/PID/exe; nil when the process had ended (or hid it) before it could be read.
    public var executable: String?
    /// The systemd unit of the peer's cgroup (`app-build.scope`, `tokend.service`), when it has one.
    public var unit: String?
    /// The peer's cgroup v2 path (/proc/PID/cgroup).
    public var cgroup: String?
    /// Identical requests of one peer answered in a row are one line: how many (absent: one).
    public var count: Int?
    /// The time of the last of them, when `count` is more than one.
    public var until: String?

    public init(time: String, consumer: String, op: String, outcome: String) {
        self.time = time
        self.consumer = consumer
        self.op = op
        self.outcome = outcome
    }

    /// The consumer name the main socket's records carry.
    public static let mainConsumer = "main"
    /// The audit's file name in its directory; rotated ones get `.1`, `.2`.
    public static let fileName = "audit.jsonl"

    /// One line of the file; nil for one that is not a record.
    public static func decode(_ line: Substring) -> AuditRecord? {
        try? JSONDecoder().decode(AuditRecord.self, from: Data(line.utf8))
    }

    /// `$XDG_STATE_HOME/tokend` (default `~/.local/state/tokend`, the XDG base directory spec's
    /// place for logs and history): the audit's directory. Nil when neither is set.
    public static func directory(environment: Environment) -> String? {
        if let state = environment["XDG_STATE_HOME"], state.hasPrefix("/") { return state + "/tokend" }
        if let home = environment["HOME"], home.hasPrefix("/") { return home + "/.local/state/tokend" }
        return nil
    }
}
