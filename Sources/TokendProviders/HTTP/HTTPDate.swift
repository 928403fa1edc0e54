import FoundationEssentials
import TokendCore

/// The HTTP `Date` header (RFC 9110 §5.6.7, IMF-fixdate: `Sun, 06 Nov 1994 08:49:37 GMT`), the
/// only form servers send today. Read to tell a wrong local clock from a wrong token.
enum HTTPDate {
    static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// The instant, or nil for anything that is not an IMF-fixdate within 1970…9999.
    static func parse(_ text: String) -> Date? {
        let fields = text.split(separator: " ")
        guard fields.count == 6, fields[0].count == 4, fields[0].hasSuffix(","), fields[5] == "GMT",
            let day = number(fields[1], digits: 2), let month = months.firstIndex(of: String(fields[2])),
            let year = number(fields[3], digits: 4)
        else { return nil }
        let time = fields[4].split(separator: ":")
        guard time.count == 3, let hour = number(time[0], digits: 2), let minute = number(time[1], digits: 2),
            let second = number(time[2], digits: 2), (1...31).contains(day), hour < 24, minute < 60, second < 61
        else { return nil }
        let seconds = Timestamp.secondsSince1970(year: year, month: month + 1, day: day, hour: hour, minute: minute, second: second)
        return Date.bounded(secondsSince1970: Double(seconds))
    }

    /// Exactly `digits` ASCII digits as a number.
    private static func number(_ text: Substring, digits: Int) -> Int? {
        guard text.count == digits, text.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        return Int(text)  // conversion: a failable parse of at most four digits
    }
}
