/// Requests waiting for an account's state to change (a refresh to finish, mostly).
///
/// Every change wakes all of an account's waiters; each re-reads the state and decides whether
/// to wait again. A waiter also wakes at its own deadline (`resume`), so none waits past its
/// request's timeout. Owned by the engine actor, so it needs no lock.
struct AccountWaiters {
    private var waiting: [String: [UInt64: CheckedContinuation<Void, Never>]] = [:]
    private var lastID: UInt64 = 0

    /// A number for the next waiter, unique for the engine's life.
    mutating func nextID() -> UInt64 {
        lastID += 1
        return lastID
    }

    mutating func add(_ continuation: CheckedContinuation<Void, Never>, id: UInt64, account name: String) {
        waiting[name, default: [:]][id] = continuation
    }

    /// Wakes one waiter (its deadline came); nothing if it was woken already.
    mutating func resume(_ id: UInt64, account name: String) {
        waiting[name]?.removeValue(forKey: id)?.resume()
    }

    /// Wakes every waiter of `name`.
    mutating func wakeAll(_ name: String) {
        guard let waiters = waiting.removeValue(forKey: name) else { return }
        for waiter in waiters.values { waiter.resume() }
    }

    /// Wakes every waiter of every account (shutdown).
    mutating func wakeEveryone() {
        for name in Array(waiting.keys) { wakeAll(name) }
    }

    func count(account name: String) -> Int { waiting[name]?.count ?? 0 }
}
