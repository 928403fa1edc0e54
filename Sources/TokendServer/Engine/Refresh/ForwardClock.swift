import Synchronization
import TokendCore
import TokendSystem

/// The daemon's clock: never behind the wall clock, never backwards.
///
/// `now = max(previous now + boot time elapsed since, wall clock)`. Boot time (CLOCK_BOOTTIME)
/// keeps counting through a suspend but not through a paused VM or WSL2 guest, and a clock set
/// late by NTP starts behind: following the wall clock forward at once means a token can only
/// ever look older than it is, never younger, so nothing dead is served (the cost of a wrong
/// forward step is one early refresh). A backward step is ignored until the wall clock catches
/// up, so it can never make a dead token look alive again. Expiries the daemon computes count
/// from its own "now" when a request went out, so they stay consistent with this clock.
public final class ForwardClock: WallClock {
    /// The clock's sources, injectable so tests can step them independently.
    public struct Sources: Sendable {
        public var wall: @Sendable () -> Double
        public var boot: @Sendable () -> Double

        public init(wall: @escaping @Sendable () -> Double, boot: @escaping @Sendable () -> Double) {
            self.wall = wall
            self.boot = boot
        }

        public static let system = Sources(wall: { Date().timeIntervalSince1970 }, boot: SystemWallClock.bootSeconds)
    }

    private struct Reading {
        var now: Double
        var boot: Double
    }

    private let sources: Sources
    private let last: Mutex<Reading>

    public init(sources: Sources = .system) {
        self.sources = sources
        last = Mutex(Reading(now: sources.wall(), boot: sources.boot()))
    }

    public func now() -> Date {
        let wall = sources.wall()
        let boot = sources.boot()
        return last.withLock { reading in
            // Boot time never runs backwards; the max() guards against a broken source anyway.
            let elapsed = max(0, boot - reading.boot)
            reading = Reading(now: max(reading.now + elapsed, wall), boot: boot)
            return Date(timeIntervalSince1970: reading.now)
        }
    }

    public func steadySeconds() -> Double { sources.boot() }
}
