import FoundationEssentials
import TokendCore

extension FleetMember {
    // MARK: - The lease

    /// Grants the lease, then keeps it alive every third of its TTL; a lease etcd let expire
    /// (this member was cut off) is replaced by a new one, with no election held.
    func keepLease() async {
        while !Task.isCancelled {
            let sent = clock.steadySeconds()
            do throws(FleetError) {
                if let current = lease {
                    let answer = try await client.keepAlive(current.id)
                    // An expired lease answers TTL 0, which proto3's JSON leaves out.
                    if let ttl = answer.TTL?.value, ttl > 0 {
                        lease = (current.id, sent + Double(ttl) - settings.leaseMargin)
                    } else {
                        lease = nil
                        logger.warning("the fleet lease expired at etcd (this member was cut off); taking a new one", metadata: ["lease": "\(current.id)"])
                        continue
                    }
                } else {
                    let answer = try await client.grantLease(seconds: settings.lease)
                    guard let id = answer.ID?.value, let ttl = answer.TTL?.value, ttl > 0 else {
                        throw FleetError(.refused, "etcd granted no lease")
                    }
                    lease = (id, sent + Double(ttl) - settings.leaseMargin)
                }
                note(nil)
            } catch {
                note(error)
                // Not found: the lease is gone at etcd; anything else leaves the deadline to pass.
                if error.code == .refused { lease = nil }
            }
            guard await timers.sleep(seconds: settings.lease / 3, from: clock) else { return }
        }
    }

    /// Seconds left before this member's own deadline; nil without a lease.
    func leaseTimeLeft() -> Double? {
        lease.map { $0.deadline - clock.steadySeconds() }
    }

    /// This member's lease, waited for (at most a lease's time) when it has none yet or too
    /// little time left to refresh: a member that just started, or whose lease etcd let expire,
    /// is granted one within a keep-alive round, and a keep-alive late under load is followed by
    /// one that lengthens it. Campaigning or following meanwhile would leave an account this
    /// member holds, or is given, with nobody to refresh it (an import answered `unavailable`).
    func grantedLease() async -> (id: Int64, deadline: Double)? {
        if (leaseTimeLeft() ?? 0) < Self.minimumRefreshBudget { await wait(for: .lease, until: clock.now().addingTimeInterval(settings.lease)) }
        return lease
    }

    /// Whether this member holds the account's election, taking it if nobody does: the key is
    /// created only if absent, under this member's lease, so it goes when the lease expires.
    func campaign(_ account: String) async throws(FleetError) -> Bool {
        guard let lease, lease.deadline - clock.steadySeconds() >= Self.minimumRefreshBudget else { return false }
        var election = elect(account, under: lease.id)
        election.failure = [EtcdRequestOp(request_range: EtcdRangeRequest(key: holderKey(account).base64))]
        let answer = try await client.txn(election)
        if answer.succeeded == true { return true }
        return answer.responses?.first?.response_range?.kvs?.first?.lease?.value == lease.id
    }

    /// The transaction that makes this member the account's holder if nobody is: the holder key
    /// created only if absent, under `lease`.
    nonisolated func elect(_ account: String, under lease: Int64) -> EtcdTxnRequest {
        let key = holderKey(account).base64
        return EtcdTxnRequest(
            compare: [EtcdCompare(key: key, target: "CREATE", create_revision: EtcdNumber(0))],
            success: [EtcdRequestOp(request_put: EtcdPut(key: key, value: Array(memberID.utf8).base64, lease: EtcdNumber(lease)))],
            failure: [])
    }
}
