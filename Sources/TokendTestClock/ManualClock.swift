import Synchronization
import TokendCore

/// A wall clock that moves only when a test says so, for deterministic expiry and backoff.
/// Sendable through `Mutex`; safe to advance from a test while the code under test reads it.
public final class ManualClock: WallClock {
    private let current: Mutex<Date>

    /// The default start is a fixed, round instant (2027-01-15T08:00Z): every run sees the same
    /// numbers, and a value that leaked in from the system clock stands out against it.
    public init(_ start: Date = Date(timeIntervalSince1970: 1_800_000_000)) {
        current = Mutex(start)
    }

    public func now() -> Date {
        current.withLock { $0 }
    }

    /// Moves the clock forward (or back, with a negative amount: a clock jump).
    public func advance(by seconds: Double) {
        current.withLock { $0.addTimeInterval(seconds) }
    }

    public func set(_ date: Date) {
        current.withLock { $0 = date }
    }
}
