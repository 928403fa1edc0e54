import TokendCore
import TokendProtocol

/// Who sent a request: the socket it came through and the peer behind it.
public struct Caller: Sendable, Equatable {
    /// nil: the main socket; else the consumer's name.
    public var consumer: String?
    public var peer: PeerIdentity

    public init(consumer: String?, peer: PeerIdentity) {
        self.consumer = consumer
        self.peer = peer
    }

    /// A request with no socket behind it (in-process tests, the fuzzer).
    public static let unknown = Caller(consumer: nil, peer: .unknown)
}

/// One thing worth recording, as the answering thread knows it: raw values only, so recording
/// costs no formatting there. `AuditLog` turns it into an `AuditRecord` off that thread.
public struct AuditEntry: Sendable, Equatable {
    public var time: Date
    public var caller: Caller
    /// The op's name (`Op.rawValue`), `accept` for a peer refused at accept, `proxy` for a
    /// proxied request.
    public var op: String
    public var account: String?
    public var kind: TokenKind?
    public var audience: String?
    public var scope: String?
    /// A proxied request's origin (`https://api.example.com`): never its path or query.
    public var upstream: String?
    /// nil: served. Else the error answered (its message is the record's reason: never a secret).
    public var failure: TokendError?

    public init(
        time: Date, caller: Caller, op: String, account: String? = nil, kind: TokenKind? = nil, audience: String? = nil, scope: String? = nil,
        upstream: String? = nil, failure: TokendError? = nil
    ) {
        self.time = time
        self.caller = caller
        self.op = op
        self.account = account
        self.kind = kind
        self.audience = audience
        self.scope = scope
        self.upstream = upstream
        self.failure = failure
    }

    /// Equal but for the time: a repeat that folds into the entry before it.
    func repeats(_ other: AuditEntry) -> Bool {
        // The cheap fields first: on the listening thread, most entries differ by pid or account.
        caller.peer.pid == other.caller.peer.pid && op == other.op && account == other.account && kind == other.kind && failure == other.failure
            && caller == other.caller && audience == other.audience && scope == other.scope && upstream == other.upstream
    }

    /// The record written for this entry (`count` of them, the last at `until`).
    func record(count: Int, until: Date) -> AuditRecord {
        var record = AuditRecord(time: Timestamp.format(time), consumer: caller.consumer ?? AuditRecord.mainConsumer, op: op, outcome: failure?.code.rawValue ?? "ok")
        record.account = account
        record.kind = kind?.rawValue
        record.audience = audience
        record.scope = scope
        record.upstream = upstream
        record.reason = failure.map { String($0.message.singleLine.prefix(AuditLog.maximumReasonLength)) }
        if caller.peer.pid > 0 {
            record.pid = caller.peer.pid
            record.uid = caller.peer.uid
        }
        record.executable = caller.peer.executable
        record.cgroup = caller.peer.cgroup
        record.unit = caller.peer.unit
        if count > 1 {
            record.count = count
            record.until = Timestamp.format(until)
        }
        return record
    }
}
