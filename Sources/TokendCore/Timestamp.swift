#if canImport(Glibc)
import Glibc
#endif

/// RFC 3339 timestamps in UTC with whole seconds: what the protocol carries (`expires_at`).
/// Hand-rolled over `gmtime_r`/`timegm` so that tokenctl needs neither ICU nor full Foundation.
public enum Timestamp {
    /// Instants outside 1970…9999 are clamped to those bounds: nothing real lies there, and the
    /// conversion to `time_t` would otherwise trap.
    public static func format(_ date: Date) -> String {
        var seconds = time_t(Int(saturating: min(max(date.timeIntervalSince1970, 0), Date.latestInstant).rounded(.down)))
        var parts = tm()
        gmtime_r(&seconds, &parts)
        // Digits written into place: every token reply carries one, and padded Strings cost it
        // several allocations.
        var text = Array("0000-00-00T00:00:00Z".utf8)
        func put(_ value: Int32, at start: Int, width: Int) {
            var rest = value  // 0...9999: the instant is clamped above
            for index in (start..<start + width).reversed() {
                text[index] = UInt8(ascii: "0") + UInt8(truncatingIfNeeded: rest % 10)
                rest /= 10
            }
        }
        put(parts.tm_year + 1900, at: 0, width: 4)
        put(parts.tm_mon + 1, at: 5, width: 2)
        put(parts.tm_mday, at: 8, width: 2)
        put(parts.tm_hour, at: 11, width: 2)
        put(parts.tm_min, at: 14, width: 2)
        put(parts.tm_sec, at: 17, width: 2)
        return String(decoding: text, as: UTF8.self)
    }

    /// Parses `YYYY-MM-DDTHH:MM:SS[.fff](Z|±HH:MM)`; nil for anything else.
    public static func parse(_ text: String) -> Date? {
        let bytes = Array(text.utf8)
        guard bytes.count >= 20 else { return nil }
        func number(_ range: Range<Int>) -> Int32? {
            guard range.upperBound <= bytes.count else { return nil }
            var value: Int32 = 0
            for byte in bytes[range] {
                guard byte >= 48, byte <= 57 else { return nil }
                value = value * 10 + Int32(byte - 48)  // conversion: a checked ASCII digit, at most four of them
            }
            return value
        }
        guard let year = number(0..<4), bytes[4] == 45, let month = number(5..<7), bytes[7] == 45,
            let day = number(8..<10), bytes[10] == 84 || bytes[10] == 116, let hour = number(11..<13), bytes[13] == 58,
            let minute = number(14..<16), bytes[16] == 58, let second = number(17..<19)
        else { return nil }
        var index = 19
        var fraction = 0.0
        if bytes[index] == 46 {
            var scale = 0.1
            index += 1
            while index < bytes.count, bytes[index] >= 48, bytes[index] <= 57 {
                fraction += Double(bytes[index] - 48) * scale
                scale /= 10
                index += 1
            }
        }
        guard index < bytes.count else { return nil }
        var offset = 0
        switch bytes[index] {
        case 90, 122:
            guard index + 1 == bytes.count else { return nil }
        case 43, 45:
            guard index + 6 == bytes.count, let hours = number(index + 1..<index + 3), bytes[index + 3] == 58,
                let minutes = number(index + 4..<index + 6)
            else { return nil }
            offset = (bytes[index] == 43 ? 1 : -1) * Int(hours * 3600 + minutes * 60)  // conversion: two-digit hours and minutes
        default:
            return nil
        }
        guard (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61 else { return nil }
        var parts = tm()
        parts.tm_year = year - 1900
        parts.tm_mon = month - 1
        parts.tm_mday = day
        parts.tm_hour = hour
        parts.tm_min = minute
        parts.tm_sec = second
        let seconds = timegm(&parts)
        return Date(timeIntervalSince1970: Double(seconds - offset) + fraction)
    }
}
