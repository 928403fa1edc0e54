import TokendCore

/// How many accounts are in each state, kept up to date as machines change, so that the one-line
/// summary (systemd's STATUS=, sent on every event) does not look at every account: at 10,000
/// accounts recounting them took nearly half of the daemon's CPU.
///
/// A state that depends on the clock (`active` or `stale`, `retrying` or `unavailable`) is kept
/// as the sorted instants it changes at; counting is then a binary search per such pair.
struct AccountCensus {
    private var fixed: [String: Int] = [:]
    /// Per (live, expired) pair of names, when each account in it turns from one to the other,
    /// sorted; an account without an expiry counts as already expired.
    private var changing: [Pair: [Double]] = [:]

    /// An account's state names, live and expired, and when one turns into the other
    /// (`AccountState.stateNames`).
    typealias StateNames = (live: String, expired: String, changesAt: Date?)

    private struct Pair: Hashable {
        var live: String
        var expired: String
    }

    mutating func add(_ names: StateNames) {
        if names.live == names.expired {
            fixed[names.live, default: 0] += 1
        } else {
            let instant = Self.instant(names.changesAt)
            let key = Pair(live: names.live, expired: names.expired)
            changing[key, default: []].insert(instant, at: Self.firstIndex(after: instant, in: changing[key] ?? []))
        }
    }

    mutating func remove(_ names: StateNames) {
        if names.live == names.expired {
            fixed[names.live, default: 0] -= 1
            if fixed[names.live] == 0 { fixed[names.live] = nil }
        } else {
            let instant = Self.instant(names.changesAt)
            let key = Pair(live: names.live, expired: names.expired)
            guard var instants = changing[key] else { return }
            // The last of the equal instants: firstIndex(after:) lands just past it.
            let index = Self.firstIndex(after: instant, in: instants) - 1
            guard index >= 0, instants[index] == instant else { return }
            instants.remove(at: index)
            changing[key] = instants.isEmpty ? nil : instants
        }
    }

    /// Accounts per state name at `now`, as `AccountState.stateName(at:)` names them.
    func counts(at now: Date) -> [String: Int] {
        var counts = fixed
        let now = now.timeIntervalSince1970
        for (pair, instants) in changing {
            // `stateName` says live while the expiry is after now.
            let expired = Self.firstIndex(after: now, in: instants)
            if expired > 0 { counts[pair.expired, default: 0] += expired }
            if expired < instants.count { counts[pair.live, default: 0] += instants.count - expired }
        }
        return counts
    }

    private static func instant(_ date: Date?) -> Double {
        date?.timeIntervalSince1970 ?? -.infinity
    }

    /// The index of the first element greater than `value` in sorted `instants`.
    private static func firstIndex(after value: Double, in instants: [Double]) -> Int {
        var low = 0
        var high = instants.count
        while low < high {
            let middle = (low + high) / 2
            if instants[middle] <= value { low = middle + 1 } else { high = middle }
        }
        return low
    }
}
