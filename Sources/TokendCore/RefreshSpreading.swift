/// Keeps many accounts from refreshing in the same second.
///
/// Jitter alone is 10 % of the margin (docs/architecture.md, "Refresh policy"): 30 s for hour-long tokens, but a single
/// second for 30-second ones, too little to part a hundred accounts that started together. So a
/// proactive refresh whose second is full moves to an earlier second with room, never later (a
/// later refresh eats into the margin) and never more than one margin earlier. Refreshes that a
/// request waits for are never moved.
public enum RefreshSpreading {
    /// Proactive refreshes allowed to start in one second. Five a second is one account every
    /// 200 ms — polite to any provider, and enough for a hundred 30-second accounts (5 per
    /// second × a 20-second cycle).
    public static let perSecond = 5

    /// The instant to refresh at: `desired` if its second has room, else the same sub-second
    /// offset in the latest earlier second with room, not before `earliest`. If every second in
    /// the range is full, the least crowded one.
    public static func slot(desired: Date, earliest: Date, taken: [Date], perSecond: Int = perSecond) -> Date {
        var counts: [Double: Int] = [:]
        for instant in taken { counts[second(of: instant), default: 0] += 1 }
        return slot(desired: desired, earliest: earliest, takenCount: taken.count, perSecond: perSecond) { counts[$0, default: 0] }
    }

    /// The same choice from a table of refreshes per second (`takenIn(second(of: instant))`),
    /// `takenCount` of them in all: what a scheduler keeps up to date as it arms and disarms, so
    /// that placing one refresh does not look at every other account's.
    public static func slot(
        desired: Date, earliest: Date, takenCount: Int, perSecond: Int = perSecond, takenIn: (Double) -> Int
    ) -> Date {
        let desiredSecond = second(of: desired)
        let offset = desired.timeIntervalSince1970 - desiredSecond
        var best = desired
        var bestCount = Int.max
        var second = desiredSecond
        // At most `takenCount / perSecond` seconds can be full, so one more step finds room:
        // the bound keeps an absurd instant (where `second - 1 == second`) from looping forever.
        for _ in 0...(takenCount / max(perSecond, 1)) {
            let candidate = Date(timeIntervalSince1970: second + offset)
            guard candidate >= earliest || second == desiredSecond else { break }
            let count = takenIn(second)
            if count < perSecond { return candidate }
            if count < bestCount {
                best = candidate
                bestCount = count
            }
            second -= 1
        }
        return best
    }

    /// The whole second an instant falls in, the key of the per-second table.
    public static func second(of instant: Date) -> Double {
        instant.timeIntervalSince1970.rounded(.down)
    }
}
