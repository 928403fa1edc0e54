import Synchronization
import TokendCore

/// A wall clock that moves only when a test says so, for deterministic expiry and backoff; also
/// a timer source whose timers fire only when the test advances it past their deadlines.
/// Sendable through `Mutex`; safe to advance from a test while the code under test reads it.
public final class ManualClock: WallClock, TimerSource {
    private struct Timer {
        var deadline: Date
        var fire: @Sendable () -> Void
    }

    private struct State {
        var now: Date
        /// Follows every forward move of `now` but a `step`'s (`steadySeconds`).
        var steady: Double = 0
        var timers: [UInt64: Timer] = [:]
        var nextID: UInt64 = 0

        mutating func move(to date: Date, timePasses: Bool) {
            if timePasses { steady += max(0, date.timeIntervalSince(now)) }
            now = date
        }
    }

    private let state: Mutex<State>

    /// The default start is a fixed, round instant (2027-01-15T08:00Z): every run sees the same
    /// numbers, and a value that leaked in from the system clock stands out against it.
    public init(_ start: Date = Date(timeIntervalSince1970: 1_800_000_000)) {
        state = Mutex(State(now: start))
    }

    public func now() -> Date {
        state.withLock { $0.now }
    }

    public func steadySeconds() -> Double {
        state.withLock { $0.steady }
    }

    /// Moves the clock forward (or back, with a negative amount: a clock jump), firing every
    /// timer that falls due, in deadline order; returns how many fired.
    @discardableResult
    public func advance(by seconds: Double) -> Int {
        set(now().addingTimeInterval(seconds))
    }

    /// Steps the wall clock by `seconds` (settimeofday, an NTP step) while no time passes: the
    /// steady clock stays. Timers due by the new time fire, as `advance` fires them.
    @discardableResult
    public func step(by seconds: Double) -> Int {
        move(to: now().addingTimeInterval(seconds), timePasses: false)
    }

    /// Sets the clock, firing every timer due by `date` in deadline order (timers armed by a
    /// firing one fire too if due). While a timer fires, the clock reads its deadline. Forward,
    /// the steady clock moves with it.
    @discardableResult
    public func set(_ date: Date) -> Int {
        move(to: date, timePasses: true)
    }

    private func move(to date: Date, timePasses: Bool) -> Int {
        var fired = 0
        while let fire = state.withLock({ state -> (@Sendable () -> Void)? in
            let due = state.timers.filter { $0.value.deadline <= date }
            // Ties fire in the order they were armed.
            guard let (id, timer) = due.min(by: { ($0.value.deadline, $0.key) < ($1.value.deadline, $1.key) }) else {
                state.move(to: date, timePasses: timePasses)
                return nil
            }
            state.timers.removeValue(forKey: id)
            state.move(to: max(state.now, timer.deadline), timePasses: timePasses)
            return timer.fire
        }) {
            // Outside the lock: a firing timer may read the clock or arm another timer.
            fire()
            fired += 1
        }
        return fired
    }

    public func schedule(at deadline: Date, _ fire: @escaping @Sendable () -> Void) -> TimerHandle {
        let id = state.withLock { state in
            state.nextID += 1
            state.timers[state.nextID] = Timer(deadline: deadline, fire: fire)
            return state.nextID
        }
        return TimerHandle { [weak self] in
            self?.state.withLock { _ = $0.timers.removeValue(forKey: id) }
        }
    }

    /// The deadlines of the timers armed and not yet fired, earliest first.
    public var armedDeadlines: [Date] {
        state.withLock { $0.timers.values.map(\.deadline).sorted() }
    }
}
