extension FixedWidthInteger {
    /// `value` rounded toward zero, clamped to the type's range (NaN is 0). `Int(_:)` traps on a
    /// Double it cannot hold, and durations here can come from stored or received data: a
    /// keyring item or a provider that says 1e300 must not crash the daemon or tokenctl.
    /// scripts/check-conversions keeps every other Double-to-integer conversion out of Sources.
    /// Inlinable: unspecialized, the generic range checks cost a token reply 5 % of its time.
    @inlinable
    public init(saturating value: Double) {
        if value.isNaN {
            self = 0
        } else if value >= Double(Self.max) {
            self = .max
        } else if value <= Double(Self.min) {
            self = .min
        } else {
            self = Self(value)  // conversion: NaN and both ends of the range are handled above
        }
    }
}

extension Duration {
    /// `seconds` as a Duration, clamped to 0 … `limit` (NaN is 0): `Duration.seconds(Double)`
    /// traps on NaN or infinity, and a wait may be computed from a provider's or a user's number.
    public static func bounded(seconds: Double, limit: Double = 86_400) -> Duration {
        .milliseconds(Int64(saturating: min(max(seconds.isNaN ? 0 : seconds, 0), limit) * 1000))
    }
}

extension Date {
    /// The latest instant tokend stores, serves or formats: 9999-12-31T23:59:59Z. No real token
    /// lives that long, and RFC 3339's four-digit year cannot say anything later.
    public static let latestInstant: Double = 253_402_300_799

    /// `seconds` since 1970 as a Date if it is between 1970 and the year 9999, else nil.
    public static func bounded(secondsSince1970 seconds: Double) -> Date? {
        guard seconds.isFinite, seconds >= 0, seconds <= latestInstant else { return nil }
        return Date(timeIntervalSince1970: seconds)
    }
}
