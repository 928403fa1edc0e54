import TokendCore
import TokendProtocol

/// Who sent a request: the socket it came through and the peer behind it. A class, one per
/// connection: the answering thread keeps and passes it as one reference (a retain, where the
/// struct it was copied its strings), and a repeat on the same connection is told by identity.
public final class Caller: Sendable, Equatable {
    /// nil: the main socket; else the consumer's name.
    public let consumer: String?
    public let peer: PeerIdentity

    public init(consumer: String?, peer: PeerIdentity) {
        self.consumer = consumer
        self.peer = peer
    }

    /// A request with no socket behind it (in-process tests, the fuzzer).
    public static let unknown = Caller(consumer: nil, peer: .unknown)

    public static func == (lhs: Caller, rhs: Caller) -> Bool {
        lhs === rhs || (lhs.peer == rhs.peer && lhs.consumer == rhs.consumer)
    }
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

    /// Whether a request of these parts repeats `entry`, compared field by field where it lies:
    /// asked of the entry itself, the optimizer copied the whole entry first (~350 instructions
    /// of a `token` line, callgrind). The cheap fields first: on the listening thread, most
    /// entries differ by connection or account, and a connection's own repeat is the same `Caller`.
    static func matches(
        _ entry: UnsafePointer<AuditEntry>, _ caller: Caller, _ op: String, _ account: String?, _ kind: TokenKind?, _ audience: String?, _ scope: String?,
        _ upstream: String?, _ failure: TokendError?
    ) -> Bool {
        entry.pointee.caller == caller && entry.pointee.account == account && entry.pointee.kind == kind && entry.pointee.op == op
            && entry.pointee.failure == failure && entry.pointee.audience == audience && entry.pointee.scope == scope && entry.pointee.upstream == upstream
    }

    /// The record written for this entry (`count` of them, the last at `until`), with `peer`
    /// (the caller's as /proc describes it, when read) for the peer's fields.
    func record(count: Int, until: Date, peer: PeerIdentity? = nil) -> AuditRecord {
        let peer = peer ?? caller.peer
        var record = AuditRecord(time: Timestamp.format(time), consumer: caller.consumer ?? AuditRecord.mainConsumer, op: op, outcome: failure?.code.rawValue ?? "ok")
        record.account = account
        record.kind = kind?.rawValue
        record.audience = audience
        record.scope = scope
        record.upstream = upstream
        record.reason = failure.map { String($0.message.singleLine.prefix(AuditLog.maximumReasonLength)) }
        if peer.pid > 0 {
            record.pid = peer.pid
            record.uid = peer.uid
        }
        record.executable = peer.executable
        record.cgroup = peer.cgroup
        record.unit = peer.unit
        if count > 1 {
            record.count = count
            record.until = Timestamp.format(until)
        }
        return record
    }
}
