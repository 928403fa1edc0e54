import Dispatch
import TokendCore

/// The daemon's timer source: one-shot Dispatch timers on a monotonic deadline.
///
/// The delay is taken from the injected clock when the timer is armed and then counted on the
/// monotonic clock: a wall clock set back must not hold every timer (keyring poll, recheck
/// included) back by as much. A suspend can make a long timer late; the 10 s recheck, armed the
/// same way, catches that up. Whoever a timer wakes asks the clock again and sleeps on if early.
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
        let timer = ArmedTimer(DispatchSource.makeTimerSource(queue: queue))
        timer.source.schedule(deadline: .now() + max(0, deadline.timeIntervalSince(clock.now())), leeway: Self.leeway)
        timer.source.setEventHandler {
            fire()
            timer.source.cancel()  // one-shot: drops the handler (and what it captured) at once
        }
        timer.source.resume()
        return TimerHandle { timer.source.cancel() }
    }
}

/// `@unchecked Sendable`: a Dispatch source is thread-safe (its `cancel` may be called from any
/// thread, any number of times), and the reference is never reassigned.
private final class ArmedTimer: @unchecked Sendable {
    let source: any DispatchSourceTimer
    init(_ source: any DispatchSourceTimer) { self.source = source }
}
