import Synchronization
import Testing
import TokendCore
@testable import TokendServer

/// The daemon's clock against hand-stepped wall and boot clocks (issue 8, item 1).
@Suite struct ForwardClockTests {
    final class Sources: Sendable {
        let wall = Mutex<Double>(1_000_000)
        let boot = Mutex<Double>(50)
        var clock: ForwardClock {
            ForwardClock(sources: .init(wall: { self.wall.withLock { $0 } }, boot: { self.boot.withLock { $0 } }))
        }
    }

    @Test func followsBootTimeWhileTheWallClockStandsStill() {
        let sources = Sources()
        let clock = sources.clock
        sources.boot.withLock { $0 += 30 }
        #expect(clock.now().timeIntervalSince1970 == 1_000_030)
    }

    /// A paused VM: boot time stood still for 40 s, then the guest's wall clock is corrected.
    @Test func aForwardWallStepIsFollowedAtOnce() {
        let sources = Sources()
        let clock = sources.clock
        sources.boot.withLock { $0 += 1 }
        sources.wall.withLock { $0 += 41 }
        #expect(clock.now().timeIntervalSince1970 == 1_000_041)
        sources.boot.withLock { $0 += 2 }
        sources.wall.withLock { $0 += 2 }
        #expect(clock.now().timeIntervalSince1970 == 1_000_043)
    }

    /// A backward step never moves the clock back; it keeps counting boot time meanwhile.
    @Test func aBackwardWallStepIsIgnored() {
        let sources = Sources()
        let clock = sources.clock
        sources.wall.withLock { $0 -= 3600 }
        sources.boot.withLock { $0 += 5 }
        #expect(clock.now().timeIntervalSince1970 == 1_000_005)
        sources.wall.withLock { $0 = 1_000_000 + 100 }
        #expect(clock.now().timeIntervalSince1970 == 1_000_100, "forward again once the wall clock passes it")
    }
}
