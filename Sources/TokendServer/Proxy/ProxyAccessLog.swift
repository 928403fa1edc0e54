import Logging
import Synchronization
import TokendCore
import TokendProxy

/// The proxies' side of the daemon's audit (Audit/): each proxied request becomes one record of op
/// `proxy` with the consumer, account, upstream origin and the peer (pid and uid on a socket
/// proxy; on TCP loopback only the uid is known, and records carry no pid); a consumer limited
/// to a `unit` is checked at accept from the peer's cgroup, as its socket is.
final class ProxyAccessLog: ProxyAccess {
    let audit: AuditLog
    /// Each consumer's `unit`, from the configuration last applied.
    let units = Mutex<[String: String]>([:])

    init(audit: AuditLog) {
        self.audit = audit
    }

    func apply(_ configuration: Configuration) {
        let units = configuration.consumers.values.reduce(into: [String: String]()) { units, consumer in units[consumer.name] = consumer.unit }
        self.units.withLock { $0 = units }
    }

    func record(_ record: ProxyAuditRecord) {
        let failure: TokendError?
        switch record.outcome {
        case .forwarded: failure = nil
        case .refused(let code): failure = TokendError(Self.code(of: code, tokenFailure: record.tokenFailure), record.reason ?? code.rawValue)
        }
        let peer = PeerIdentity(pid: record.peer.pid ?? 0, uid: record.peer.uid ?? 0, gid: 0, executable: record.peer.executable, cgroup: record.peer.cgroup)
        audit.record(AuditEntry(
            time: audit.now(), caller: Caller(consumer: record.consumer, peer: peer), op: "proxy", account: record.account, kind: record.kind,
            audience: record.scope?.audience, scope: record.scope?.scopeParameter, upstream: record.upstream.isEmpty ? nil : record.upstream, failure: failure))
    }

    /// The protocol's code for a proxy refusal, as the audit and `tokenctl audit` show outcomes.
    static func code(of refusal: ProxyRefusal.Code, tokenFailure: TokendError.Code?) -> TokendError.Code {
        switch refusal {
        case .hostNotAllowed, .upstreamRefused, .connect, .otherUser: .forbidden
        case .noToken: tokenFailure ?? .unavailable
        case .upstreamFailed: .unavailable
        case .tooLarge: .tooLarge
        case .badRequest, .notProxyRequest: .badRequest
        }
    }

    /// Reads the peer's executable and cgroup while it surely runs (a socket proxy's peer has a
    /// pid; a TCP one has none), and checks the consumer's `unit`: a consumer limited to one takes
    /// only peers whose cgroup lies in it, so a TCP proxy's peers are refused with the way out.
    func admit(_ peer: ProxyPeer, consumer: String) -> (peer: ProxyPeer, refusal: String?) {
        var peer = peer
        var identity: PeerIdentity?
        if let pid = peer.pid, pid > 0 {
            let resolved = PeerIdentity(pid: pid, uid: peer.uid ?? 0, gid: 0).resolved()
            (peer.executable, peer.cgroup, identity) = (resolved.executable, resolved.cgroup, resolved)
        }
        guard let unit = units.withLock({ $0[consumer] }) else { return (peer, nil) }
        guard let identity else {
            return (peer, "consumer \"\(consumer)\" is limited to \(unit), which tokend can check only on a socket proxy: set its proxy to a socket path")
        }
        guard !identity.isInside(unit: unit) else { return (peer, nil) }
        return (peer, "consumer \"\(consumer)\" is limited to \(unit), and pid \(identity.pid) runs in \(identity.unit ?? identity.cgroup ?? "an unknown cgroup"): run the client there, e.g. systemd-run --user --scope --unit=\(unit) COMMAND")
    }
}
