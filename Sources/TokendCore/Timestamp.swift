/// RFC 3339 timestamps in UTC with whole seconds: what the protocol carries (`expires_at`).
/// Hand-rolled so that tokenctl needs neither ICU nor full Foundation, and in plain arithmetic
/// rather than glibc's `gmtime_r`/`timegm`, whose first call sets up the local time zone
/// (7 system calls reading /etc/localtime on every `tokenctl token`) for a UTC answer.
public enum Timestamp {
    /// Instants outside 1970…9999 are clamped to those bounds: nothing real lies there, and the
    /// conversion to `time_t` would otherwise trap.
    public static func format(_ date: Date) -> String {
        let seconds = Int(saturating: min(max(date.timeIntervalSince1970, 0), Date.latestInstant).rounded(.down))
        let (days, time) = seconds.quotientAndRemainder(dividingBy: secondsPerDay)
        let date = civil(days: days)
        // Digits written into place: every token reply carries one, and padded Strings cost it
        // several allocations.
        var text = Array("0000-00-00T00:00:00Z".utf8)
        func put(_ value: Int, at start: Int, width: Int) {
            var rest = value  // 0...9999: the instant is clamped above
            for index in (start..<start + width).reversed() {
                text[index] = UInt8(ascii: "0") + UInt8(truncatingIfNeeded: rest % 10)
                rest /= 10
            }
        }
        put(date.year, at: 0, width: 4)
        put(date.month, at: 5, width: 2)
        put(date.day, at: 8, width: 2)
        put(time / 3600, at: 11, width: 2)
        put(time / 60 % 60, at: 14, width: 2)
        put(time % 60, at: 17, width: 2)
        return String(decoding: text, as: UTF8.self)
    }

    /// Parses `YYYY-MM-DDTHH:MM:SS[.fff](Z|±HH:MM)`; nil for anything else.
    public static func parse(_ text: String) -> Date? {
        let bytes = Array(text.utf8)
        guard bytes.count >= 20 else { return nil }
        func number(_ range: Range<Int>) -> Int? {
            guard range.upperBound <= bytes.count else { return nil }
            var value = 0
            for byte in bytes[range] {
                guard byte >= 48, byte <= 57 else { return nil }
                value = value * 10 + Int(byte - 48)  // conversion: a checked ASCII digit, at most four of them
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
            offset = (bytes[index] == 43 ? 1 : -1) * (hours * 3600 + minutes * 60)
        default:
            return nil
        }
        guard (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61 else { return nil }
        let seconds = secondsSince1970(year: year, month: month, day: day, hour: hour, minute: minute, second: second)
        return Date(timeIntervalSince1970: Double(seconds - offset) + fraction)
    }

    static let secondsPerDay = 86_400

    /// What `timegm` computes for a UTC calendar time (a day or second past its month's or
    /// minute's end carries over, as there): callers bound each field, so nothing overflows.
    public static func secondsSince1970(year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int) -> Int {
        days(year: year, month: month, day: day) * secondsPerDay + hour * 3600 + minute * 60 + second
    }

    /// Days from 1970-01-01 to a date of the proleptic Gregorian calendar, month 1…12: Howard
    /// Hinnant's `days_from_civil` (years counted from March, so the leap day ends the year).
    static func days(year: Int, month: Int, day: Int) -> Int {
        let fromMarch = month <= 2 ? year - 1 : year
        let era = (fromMarch >= 0 ? fromMarch : fromMarch - 399) / 400
        let yearOfEra = fromMarch - era * 400
        let dayOfYear = (153 * ((month + 9) % 12) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The inverse, for days ≥ 0 (`civil_from_days`).
    static func civil(days: Int) -> (year: Int, month: Int, day: Int) {
        let shifted = days + 719_468
        let era = shifted / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthFromMarch = (5 * dayOfYear + 2) / 153
        let month = monthFromMarch < 10 ? monthFromMarch + 3 : monthFromMarch - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, dayOfYear - (153 * monthFromMarch + 2) / 5 + 1)
    }
}
