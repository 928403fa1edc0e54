import TokendCore
#if canImport(Glibc)
import Glibc
#endif

/// The daemon's clock: wall time at start, advanced by real elapsed time since (CLOCK_BOOTTIME,
/// which keeps counting through a suspend). A token's life is elapsed time since the provider
/// issued it, so jumps of the system clock — NTP steps, a user's `date -s`, a VM restored from
/// a snapshot — can neither make a dead token look alive nor a live one dead, while a suspend
/// still ages every token by exactly as long as the machine slept.
public struct ElapsedTimeClock: WallClock {
    let anchorWall: Date
    let anchorBoot: Double

    public init() {
        anchorWall = Date()
        anchorBoot = Self.bootSeconds()
    }

    public func now() -> Date {
        anchorWall.addingTimeInterval(Self.bootSeconds() - anchorBoot)
    }

    static func bootSeconds() -> Double {
        var spec = timespec()
        clock_gettime(CLOCK_BOOTTIME, &spec)
        return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1_000_000_000
    }
}
