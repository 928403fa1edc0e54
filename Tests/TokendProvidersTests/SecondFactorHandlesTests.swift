import Foundation
import Testing
import TokendCore
import TokendTestSupport
@testable import TokendProviders

/// The daemon's store of pending second-factor steps: a handle is taken once, lives 5 minutes,
/// and an account holds at most 8 (the oldest goes).
@Suite struct SecondFactorHandlesTests {
    static let entry = SecondFactorHandles.Entry.enrollment(sessionInfo: "s")

    @Test func aHandleIsTakenOnceAndNotAfterItsLife() {
        let clock = ManualClock()
        let handles = SecondFactorHandles(clock: clock)
        let first = handles.put(Self.entry)
        #expect(handles.take(first) == Self.entry)
        #expect(handles.take(first) == nil, "a handle is single use")
        let second = handles.put(Self.entry)
        _ = clock.advance(by: SecondFactorHandles.lifetime)
        #expect(handles.take(second) == nil, "expired")
        #expect(handles.take("forged") == nil)
    }

    @Test func theOldestGoesPastTheLimit() {
        let handles = SecondFactorHandles(clock: ManualClock())
        let all = (0...SecondFactorHandles.limit).map { _ in handles.put(Self.entry) }
        #expect(Set(all).count == all.count, "handles are random")
        #expect(handles.take(all[0]) == nil, "the oldest was dropped")
        #expect(all.dropFirst().allSatisfy { handles.take($0) == Self.entry })
    }
}
