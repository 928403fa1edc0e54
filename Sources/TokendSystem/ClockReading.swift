#if canImport(Glibc)
import Glibc
#endif

/// One clock_gettime(2) reading of `clock`, in nanoseconds: the one place a `timespec` becomes a
/// number (the timer source, the wall clock's steady time, hook deadlines).
public func clockNanoseconds(_ clock: clockid_t) -> Int64 {
    var time = timespec()
    clock_gettime(clock, &time)
    return Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)  // conversion: Int to Int64; a clock reading (seconds below 2^33)
}

/// The same reading in seconds.
public func clockSeconds(_ clock: clockid_t) -> Double {
    Double(clockNanoseconds(clock)) / 1_000_000_000
}
