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
