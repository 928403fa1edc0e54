import Dispatch
import Synchronization

/// The daemon's timer source: one-shot Dispatch timers armed twice, on a wall-clock and on a
/// monotonic deadline, firing once at whichever comes first.
///
/// The delay is taken from the injected clock when the timer is armed. The wall deadline makes a
/// suspend (or a wall clock set forward) fire it at once; the monotonic one keeps a wall clock set
/// back from holding every timer back by the step (the chaos run found the keyring poll two hours
/// late). Whoever a timer wakes asks the clock again, and sleeps on if it woke early.
public struct DispatchTimerSource: TimerSource {
    /// Timers may fire this late: refreshes are scheduled seconds early, so batching wakeups is free.
    static let leeway = DispatchTimeInterval.milliseconds(100)

    let clock: any WallClock
    /// Where every timer fires: the watchdog pings it to prove timers still run.
    public let queue: DispatchQueue

    public init(clock: any WallClock, queue: DispatchQueue = DispatchQueue(label: "tokend.timers")) {
        self.clock = clock
        self.queue = queue
    }

    public func schedule(at deadline: Date, _ fire: @escaping @Sendable () -> Void) -> TimerHandle {
        let delay = max(0, deadline.timeIntervalSince(clock.now()))
        let timer = ArmedTimer(DispatchSource.makeTimerSource(queue: queue), DispatchSource.makeTimerSource(queue: queue))
        timer.onWall.schedule(wallDeadline: .now() + delay, leeway: Self.leeway)
        timer.onMonotonic.schedule(deadline: .now() + delay, leeway: Self.leeway)
        for source in [timer.onWall, timer.onMonotonic] {
            source.setEventHandler {
                if timer.claim() { fire() }
                timer.cancel()  // one-shot: drops the handlers (and what they captured) at once
            }
            source.resume()
        }
        return TimerHandle { timer.cancel() }
    }
}

/// `@unchecked Sendable`: Dispatch sources are thread-safe (`cancel` may be called from any
/// thread, any number of times), the references are never reassigned, and `fired` is atomic.
private final class ArmedTimer: @unchecked Sendable {
    let onWall: any DispatchSourceTimer
    let onMonotonic: any DispatchSourceTimer
    private let fired = Atomic<Bool>(false)

    init(_ onWall: any DispatchSourceTimer, _ onMonotonic: any DispatchSourceTimer) {
        self.onWall = onWall
        self.onMonotonic = onMonotonic
    }

    /// True for the first of the two deadlines only.
    func claim() -> Bool { !fired.exchange(true, ordering: .acquiringAndReleasing) }

    func cancel() {
        onWall.cancel()
        onMonotonic.cancel()
    }
}
