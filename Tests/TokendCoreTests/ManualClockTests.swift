import Synchronization
import Testing
import TokendCore
import TokendTestClock

/// The manual clock as a timer source: timers fire only when it is advanced past them, in
/// deadline order, each seeing its own deadline as "now".
@Suite struct ManualClockTests {
    @Test func firesDueTimersInDeadlineOrder() {
        let clock = ManualClock()
        let t0 = clock.now()
        let seen = Mutex<[Double]>([])
        for offset in [30.0, 10, 20, 40] {
            _ = clock.schedule(at: t0.addingTimeInterval(offset)) { seen.withLock { $0.append(clock.now().timeIntervalSince(t0)) } }
        }
        #expect(clock.advance(by: 9) == 0)
        #expect(clock.advance(by: 21) == 3)
        #expect(seen.withLock { $0 } == [10, 20, 30])
        #expect(clock.now() == t0.addingTimeInterval(30))
        #expect(clock.armedDeadlines == [t0.addingTimeInterval(40)])
    }

    @Test func aCancelledTimerNeverFires() {
        let clock = ManualClock()
        let handle = clock.schedule(at: clock.now().addingTimeInterval(1)) { Issue.record("fired after cancel") }
        handle.cancel()
        #expect(clock.advance(by: 10) == 0)
    }

    /// A timer armed by a firing one fires in the same advance when it is due by then.
    @Test func aTimerArmedWhileFiringFiresIfDue() {
        let clock = ManualClock()
        let t0 = clock.now()
        let fired = Atomic<Int>(0)
        _ = clock.schedule(at: t0.addingTimeInterval(1)) {
            _ = clock.schedule(at: clock.now().addingTimeInterval(1)) { fired.add(1, ordering: .relaxed) }
        }
        #expect(clock.advance(by: 5) == 2)
        #expect(fired.load(ordering: .relaxed) == 1)
    }
}
