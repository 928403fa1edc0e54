import Synchronization

/// Arms one-shot wake-ups at wall-clock instants.
///
/// The engine never sleeps or arms a system timer itself: it asks a timer source, so the daemon
/// uses real timers and tests a manual clock that fires them only when it is advanced.
public protocol TimerSource: Sendable {
    /// Calls `fire` once, at `deadline` or as soon after it as the source can. `fire` must be
    /// quick and must not block: it runs on the source's thread (or inside a test's `advance`).
    func schedule(at deadline: Date, _ fire: @escaping @Sendable () -> Void) -> TimerHandle
}

/// A scheduled wake-up; cancelling it after it fired (or twice) does nothing.
public struct TimerHandle: Sendable {
    private let onCancel: @Sendable () -> Void

    public init(cancel: @escaping @Sendable () -> Void) {
        onCancel = cancel
    }

    public func cancel() { onCancel() }
}

extension TimerSource {
    /// `sleep(until:)` the instant `seconds` after `clock`'s now.
    public func sleep(seconds: Double, from clock: any WallClock) async -> Bool {
        await sleep(until: clock.now().addingTimeInterval(seconds))
    }

    /// Suspends until `deadline` (true), or until the task is cancelled (false, at once). How
    /// async code waits on the clock: a manual clock's test decides when it returns.
    public func sleep(until deadline: Date) async -> Bool {
        let wait = TimerWait()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                wait.start(continuation, timer: schedule(at: deadline) { wait.end(true) })
            }
        } onCancel: {
            wait.end(false)
        }
    }
}

/// One `sleep(until:)`: resumed exactly once, by the timer or by cancellation, whichever is
/// first (cancellation may come before the continuation exists).
private final class TimerWait: Sendable {
    private struct State {
        var continuation: CheckedContinuation<Bool, Never>?
        var timer: TimerHandle?
        var outcome: Bool?
    }

    private let state = Mutex(State())

    func start(_ continuation: CheckedContinuation<Bool, Never>, timer: TimerHandle) {
        let early = state.withLock { state -> Bool? in
            if let outcome = state.outcome { return outcome }
            state.continuation = continuation
            state.timer = timer
            return nil
        }
        if let early {
            timer.cancel()
            continuation.resume(returning: early)
        }
    }

    func end(_ fired: Bool) {
        let (continuation, timer) = state.withLock { state in
            if state.outcome == nil { state.outcome = fired }
            return (state.continuation.take(), state.timer.take())
        }
        timer?.cancel()
        continuation?.resume(returning: fired)
    }
}
