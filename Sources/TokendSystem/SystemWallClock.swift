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
    @Sendable public static func bootSeconds() -> Double { clockSeconds(CLOCK_BOOTTIME) }
}
