import Logging
import Synchronization
import Testing
import TokendCore
@testable import TokendServer
import TokendTestClock

/// `IdleMemory` on the manual clock: a release once a burst of work has been quiet for the
/// quiet period, none while nothing happens.
@Suite struct IdleMemoryTests {
    @Test func aBurstOfWorkIsFollowedByOneReleaseAndRestBringsNone() {
        let clock = ManualClock()
        let released = Atomic<Int>(0)
        let memory = IdleMemory(clock: clock, timers: clock, logger: Logger(label: "test")) { released.add(1, ordering: .relaxed) }
        for _ in 0..<100 { memory.noteWork() }
        #expect(clock.armedDeadlines == [clock.now().addingTimeInterval(IdleMemory.quietPeriod)], "one timer for the whole burst")
        clock.advance(by: IdleMemory.quietPeriod - 1)
        #expect(released.load(ordering: .relaxed) == 0)
        clock.advance(by: 1)
        #expect(released.load(ordering: .relaxed) == 1)
        clock.advance(by: 3600)
        #expect(released.load(ordering: .relaxed) == 1 && clock.armedDeadlines.isEmpty, "at rest: nothing armed, nothing released")
        memory.noteWork()
        clock.advance(by: IdleMemory.quietPeriod)
        #expect(released.load(ordering: .relaxed) == 2, "the next burst arms it again")
        memory.noteWork()
        memory.cancel()
        #expect(clock.armedDeadlines.isEmpty)
    }

    /// The release at the end of start-up, called while a release is armed, ends that arming:
    /// before, the armed timer fired later anyway, and work noted between the two armed a second
    /// one, so one burst released twice, the second in the quiet that followed (IdleTests on a
    /// loaded run: tokend-timers +3 in its idle window).
    @Test func aReleaseCalledWhileArmedEndsTheArming() {
        let clock = ManualClock()
        let released = Atomic<Int>(0)
        let memory = IdleMemory(clock: clock, timers: clock, logger: Logger(label: "test")) { released.add(1, ordering: .relaxed) }
        memory.noteWork()
        clock.advance(by: 10)
        memory.release()  // start-up over
        #expect(released.load(ordering: .relaxed) == 1 && clock.armedDeadlines.isEmpty, "the armed release is spent")
        memory.noteWork()
        #expect(clock.armedDeadlines == [clock.now().addingTimeInterval(IdleMemory.quietPeriod)])
        clock.advance(by: 3600)
        #expect(released.load(ordering: .relaxed) == 2, "one release for the work after it, not two")
    }
}
