import Logging
import Synchronization
import Testing
import TokendCore
@testable import TokendServer
import TokendTestClock

/// `IdleMemory` on the manual clock: a release once a burst of work has been quiet for a whole
/// tick (or has gone on for `longestBurst`), none while nothing happens.
@Suite struct IdleMemoryTests {
    static let tick = IdleMemory.quietTick

    @Test func aBurstOfWorkIsFollowedByOneReleaseAndRestBringsNone() {
        let clock = ManualClock()
        let released = Atomic<Int>(0)
        let memory = IdleMemory(clock: clock, timers: clock, logger: Logger(label: "test")) { released.add(1, ordering: .relaxed) }
        for _ in 0..<100 { memory.noteWork() }
        #expect(clock.armedDeadlines == [clock.now().addingTimeInterval(Self.tick)], "one timer for the whole burst")
        clock.advance(by: Self.tick)
        #expect(released.load(ordering: .relaxed) == 0, "the burst's work after the one that armed is in the first tick")
        clock.advance(by: Self.tick - 1)
        #expect(released.load(ordering: .relaxed) == 0)
        clock.advance(by: 1)
        #expect(released.load(ordering: .relaxed) == 1, "the quiet tick after it ends the burst")
        clock.advance(by: 3600)
        #expect(released.load(ordering: .relaxed) == 1 && clock.armedDeadlines.isEmpty, "at rest: nothing armed, nothing released")
        memory.noteWork()
        clock.advance(by: Self.tick)
        #expect(released.load(ordering: .relaxed) == 2, "the next burst arms it again; one call is over a tick later")
        memory.noteWork()
        memory.cancel()
        #expect(clock.armedDeadlines.isEmpty)
    }

    /// Work in a tick carries the burst into the next one: released a quiet tick after the last
    /// work, so between one and two ticks after it.
    @Test func workInATickPutsTheReleaseOffUntilAQuietOne() {
        let clock = ManualClock()
        let released = Atomic<Int>(0)
        let memory = IdleMemory(clock: clock, timers: clock, logger: Logger(label: "test")) { released.add(1, ordering: .relaxed) }
        memory.noteWork()
        for _ in 0..<3 {
            clock.advance(by: Self.tick / 2)
            memory.noteWork()
            clock.advance(by: Self.tick / 2)
            #expect(released.load(ordering: .relaxed) == 0, "work in the tick: the burst goes on")
            #expect(clock.armedDeadlines == [clock.now().addingTimeInterval(Self.tick)])
        }
        clock.advance(by: Self.tick)
        #expect(released.load(ordering: .relaxed) == 1 && clock.armedDeadlines.isEmpty, "a quiet tick ends it")
    }

    /// A daemon that never goes quiet is released `longestBurst` after the burst began, and the
    /// work after that arms a new burst.
    @Test func aBurstThatNeverEndsIsReleasedAtItsLongest() {
        let clock = ManualClock()
        let released = Atomic<Int>(0)
        let memory = IdleMemory(clock: clock, timers: clock, logger: Logger(label: "test")) { released.add(1, ordering: .relaxed) }
        memory.noteWork()
        var elapsed = 0.0
        while released.load(ordering: .relaxed) == 0, elapsed < 2 * IdleMemory.longestBurst {
            clock.advance(by: 1)
            elapsed += 1
            memory.noteWork()
        }
        #expect(released.load(ordering: .relaxed) == 1)
        #expect(elapsed >= IdleMemory.longestBurst && elapsed < IdleMemory.longestBurst + Self.tick)
        #expect(clock.armedDeadlines == [clock.now().addingTimeInterval(Self.tick)], "the work after the release armed again")
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
        clock.advance(by: Self.tick / 2)
        memory.release()  // start-up over
        #expect(released.load(ordering: .relaxed) == 1 && clock.armedDeadlines.isEmpty, "the armed release is spent")
        memory.noteWork()
        #expect(clock.armedDeadlines == [clock.now().addingTimeInterval(Self.tick)])
        clock.advance(by: 3600)
        #expect(released.load(ordering: .relaxed) == 2, "one release for the work after it, not two")
    }
}
