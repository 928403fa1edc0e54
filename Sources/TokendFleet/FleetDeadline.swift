import TokendCore

/// A piece of work bounded by a timer on the daemon's `TimerSource` (docs/architecture.md,
/// "Time"): whichever ends first cancels the other.
enum FleetDeadline {
    /// `body`'s value, or nil if `seconds` passed first (the body is cancelled then).
    static func race<Value: Sendable>(
        _ seconds: Double, clock: any WallClock, timers: any TimerSource, _ body: @escaping @Sendable () async throws -> Value
    ) async throws -> Value? {
        try await withThrowingTaskGroup(of: Value?.self) { group in
            group.addTask { try await body() }
            group.addTask {
                _ = await timers.sleep(until: clock.now().addingTimeInterval(seconds))
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next() else { return nil }
            return first
        }
    }
}
