import Foundation
import Testing
import TokendCore

/// Timestamp's calendar arithmetic against glibc's `timegm` and `gmtime_r`, which it replaced
/// on tokenctl's path (they read /etc/localtime first): the same answer for every instant tried.
@Suite struct TimestampCalendarTests {
    static let edges: [Int] = [0, 59, 86_399, 86_400, 951_782_400 /* 2000-02-29 */, 951_868_799, 4_107_542_400 /* 2100-03-01 */, Int(Date.latestInstant)]

    @Test func formatIsWhatGmtimeSays() {
        var random = SplitMix(seed: 47)  // seeded: a failure names an instant to try again
        for seconds in Self.edges + (0..<20_000).map({ _ in Int.random(in: 0...Int(Date.latestInstant), using: &random) }) {
            var time = time_t(seconds)
            var parts = tm()
            gmtime_r(&time, &parts)
            let expected = String(
                format: "%04d-%02d-%02dT%02d:%02d:%02dZ", parts.tm_year + 1900, parts.tm_mon + 1, parts.tm_mday, parts.tm_hour, parts.tm_min, parts.tm_sec)
            #expect(Timestamp.format(Date(timeIntervalSince1970: Double(seconds))) == expected, "\(seconds)")
        }
    }

    /// Every field at every value the parser lets through, a day past a month's end and a leap
    /// second included: timegm carries them over, and so does the arithmetic.
    @Test func parseIsWhatTimegmSays() {
        var random = SplitMix(seed: 48)
        for _ in 0..<20_000 {
            let fields = (
                year: Int.random(in: 1970...9998, using: &random), month: Int.random(in: 1...12, using: &random),
                day: Int.random(in: 1...31, using: &random), hour: Int.random(in: 0...23, using: &random),
                minute: Int.random(in: 0...59, using: &random), second: Int.random(in: 0...60, using: &random))
            var parts = tm()
            parts.tm_year = Int32(fields.year - 1900)
            parts.tm_mon = Int32(fields.month - 1)
            parts.tm_mday = Int32(fields.day)
            parts.tm_hour = Int32(fields.hour)
            parts.tm_min = Int32(fields.minute)
            parts.tm_sec = Int32(fields.second)
            let expected = Double(timegm(&parts))
            let text = String(format: "%04d-%02d-%02dT%02d:%02d:%02dZ", fields.year, fields.month, fields.day, fields.hour, fields.minute, fields.second)
            #expect(Timestamp.parse(text)?.timeIntervalSince1970 == expected, "\(text)")
            #expect(Timestamp.parse(text.dropLast() + "+02:30")?.timeIntervalSince1970 == expected - 9000, "\(text)")
        }
    }
}
