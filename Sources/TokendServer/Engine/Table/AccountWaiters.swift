/// Requests waiting for an account's state to change (a refresh to finish, mostly), by request:
/// what an account is waited on for belongs to the requests, not to the account's state.
///
/// Every change wakes all of an account's waiters; each re-reads the state and decides whether
/// to wait again. A waiter also wakes at its own deadline (`resume`), so none waits past its
/// request's timeout. Owned by the engine actor, so it needs no lock.
struct AccountWaiters {
    private struct Waiter {
        var account: String
        var continuation: CheckedContinuation<Void, Never>
    }

    private var waiting: [UInt64: Waiter] = [:]
    private var lastID: UInt64 = 0
    /// Counts every wake: a request that looked in one turn of the actor and waits in a later one
    /// passes the count it saw, and a change in between ends its wait at once (no lost wake-up).
    private(set) var changes: UInt64 = 0

    /// A number for the next waiter, unique for the engine's life.
    mutating func nextID() -> UInt64 {
        lastID += 1
        return lastID
    }

    mutating func add(_ continuation: CheckedContinuation<Void, Never>, id: UInt64, account name: String) {
        waiting[id] = Waiter(account: name, continuation: continuation)
    }

    /// Wakes one waiter (its deadline came); nothing if it was woken already.
    mutating func resume(_ id: UInt64) {
        waiting.removeValue(forKey: id)?.continuation.resume()
    }

    /// Wakes every waiter of `name`. A pass over every waiting request: there are at most as
    /// many as open connections, and most wait on the account that changed.
    mutating func wakeAll(_ name: String) {
        changes &+= 1
        let ids = waiting.compactMap { $0.value.account == name ? $0.key : nil }
        for id in ids { resume(id) }
    }

    /// Wakes every waiter of every account (shutdown).
    mutating func wakeEveryone() {
        changes &+= 1
        for id in Array(waiting.keys) { resume(id) }
    }

    func count(account name: String) -> Int { waiting.values.count(where: { $0.account == name }) }
}
