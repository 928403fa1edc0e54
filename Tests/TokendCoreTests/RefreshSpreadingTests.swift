import Testing
@testable import TokendCore

@Suite struct RefreshSpreadingTests {
    let t0 = Date(timeIntervalSince1970: 1_800_000_000.25)

    @Test func aSecondWithRoomKeepsTheDesiredInstant() {
        #expect(RefreshSpreading.slot(desired: t0, earliest: t0.addingTimeInterval(-10), taken: []) == t0)
    }

    @Test func aFullSecondMovesTheRefreshEarlierNeverLater() {
        let full = Array(repeating: t0, count: RefreshSpreading.perSecond)
        let slot = RefreshSpreading.slot(desired: t0, earliest: t0.addingTimeInterval(-10), taken: full)
        #expect(slot == t0.addingTimeInterval(-1))
    }

    @Test func neverEarlierThanAllowedTakesTheLeastCrowdedSecond() {
        let taken = Array(repeating: t0, count: 9) + Array(repeating: t0.addingTimeInterval(-1), count: 7)
        let slot = RefreshSpreading.slot(desired: t0, earliest: t0.addingTimeInterval(-1.5), taken: taken)
        #expect(slot == t0.addingTimeInterval(-1))
    }

    /// A hundred accounts wanting the same instant spread over twenty seconds.
    @Test func aHundredAccountsSpreadOverTwentySeconds() {
        var taken: [Date] = []
        for _ in 0..<100 {
            taken.append(RefreshSpreading.slot(desired: t0, earliest: t0.addingTimeInterval(-30), taken: taken))
        }
        var perSecond: [Double: Int] = [:]
        for instant in taken { perSecond[instant.timeIntervalSince1970.rounded(.down), default: 0] += 1 }
        #expect(perSecond.values.max() == RefreshSpreading.perSecond)
        #expect(perSecond.count == 20)
        #expect(taken.allSatisfy { $0 <= t0 })
    }

    /// Issue 8, item 2: at 2^53 and beyond `second - 1 == second`; six accounts there made the
    /// search loop forever during start-up restore. It must end.
    @Test func absurdInstantsEndTheSearch() {
        let absurd = Date(timeIntervalSince1970: 1e300)
        let taken = Array(repeating: absurd, count: 6)
        #expect(RefreshSpreading.slot(desired: absurd, earliest: Date(timeIntervalSince1970: 0), taken: taken) == absurd)
    }
}
