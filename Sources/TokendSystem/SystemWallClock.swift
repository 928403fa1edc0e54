import TokendCore
#if canImport(Glibc)
import Glibc
#endif

/// The wall clock itself: the one `WallClock` that reads real time (the daemon wraps it in
/// `ForwardClock`; tests use a manual one).
public struct SystemWallClock: WallClock {
    public init() {}
    public func now() -> Date { Date() }
    public func steadySeconds() -> Double { Self.bootSeconds() }

    /// CLOCK_BOOTTIME: counts through a suspend, unlike CLOCK_MONOTONIC, and no wall-clock step moves it.
    @Sendable public static func bootSeconds() -> Double {
        var spec = timespec()
        clock_gettime(CLOCK_BOOTTIME, &spec)
        return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1_000_000_000
    }
}
