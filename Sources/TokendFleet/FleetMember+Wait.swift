import FoundationEssentials

extension FleetMember {
    // MARK: - Waiting for another member's session, or for the lease

    /// What a waiter waits for: an account's session to change, or this member's lease.
    enum WaitTopic: Equatable {
        case session(String)
        case lease
    }

    /// Returns once the session this member knows for `account` is no longer at `revision`, or at `deadline`.
    func waitForChange(of account: String, from revision: Int64, until deadline: Date) async {
        guard known[account]?.revision == revision else { return }
        await wait(for: .session(account), until: deadline)
    }

    /// Returns once `topic` is woken, or at `deadline`.
    func wait(for topic: WaitTopic, until deadline: Date) async {
        nextWaiter += 1
        let id = nextWaiter
        let timer = timers.schedule(at: deadline) { Task { await self.resumeWaiter(id) } }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            waiters[id] = (topic, continuation)
        }
        timer.cancel()
    }

    func resumeWaiter(_ id: UInt64) {
        waiters.removeValue(forKey: id)?.continuation.resume()
    }

    func wake(_ topic: WaitTopic) {
        for (id, waiter) in waiters where waiter.topic == topic {
            waiters.removeValue(forKey: id)
            waiter.continuation.resume()
        }
    }

    func wakeWaiters(of account: String) {
        wake(.session(account))
    }
}
