import TokendCore

/// The wall clock itself: the one `WallClock` that reads real time (the daemon wraps it in
/// `ForwardClock`; tests use a manual one).
public struct SystemWallClock: WallClock {
    public init() {}
    public func now() -> Date { Date() }
}
