/// The source of "now" for every decision about expiry.
///
/// Wall time, not a monotonic clock: `expires_at` is an absolute instant, so after a suspend or a
/// clock jump the question "is this token still alive" must be asked of the wall clock
/// (docs/architecture.md, "Refresh policy"). Not Swift's `Clock`, which measures durations. Tests use a manual one.
public protocol WallClock: Sendable {
    func now() -> Date
    /// Seconds on a clock no step of the wall clock moves (CLOCK_BOOTTIME), from any origin: what
    /// tells a refresh that took long from one the wall clock stepped across (`AccountMachine.finish`).
    func steadySeconds() -> Double
}
