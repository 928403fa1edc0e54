import TokendCore
import TokendProtocol

/// Small text helpers for what tokenctl prints: for humans, and the JSON of credential plugins.
enum Text {
    /// `value` as one line of JSON, keys sorted, slashes as they are: what a credential plugin
    /// prints for the tool that runs it (`exec-credential`'s formats).
    static func jsonObject(_ value: some Encodable) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Encoding strings, numbers and fixed structs cannot fail.
        return String(decoding: (try? encoder.encode(value)) ?? Data(), as: UTF8.self)
    }

    /// Control characters (newlines, tabs, ESC) become spaces: one record stays one line and
    /// text from the daemon cannot drive the terminal.
    static func singleLine(_ text: String) -> String { text.singleLine }

    /// A duration for humans: the two largest units, a zero second unit dropped —
    /// "45s", "4m 12s", "5m", "1h 3m", "2d 4h".
    static func duration(_ seconds: Int) -> String {
        let seconds = max(0, seconds)
        let units = [(86_400, "d"), (3_600, "h"), (60, "m"), (1, "s")]
        guard let first = units.firstIndex(where: { seconds >= $0.0 }) else { return "0s" }
        let (size, name) = units[first]
        let major = "\(seconds / size)\(name)"
        guard first + 1 < units.count else { return major }
        let (minorSize, minorName) = units[first + 1]
        let minor = (seconds % size) / minorSize
        return minor == 0 ? major : "\(major) \(minor)\(minorName)"
    }

    /// `expires_in` as the status table shows it.
    static func expiresIn(_ seconds: Int?) -> String {
        guard let seconds else { return "-" }
        return seconds <= 0 ? "expired" : duration(seconds)
    }

    /// How long ago `timestamp` (RFC 3339) was, relative to `now`; "-" when there was none.
    static func ago(_ timestamp: String?, now: Date) -> String {
        guard let timestamp else { return "-" }
        guard let date = Timestamp.parse(timestamp) else { return singleLine(timestamp) }
        let elapsed = Int(saturating: now.timeIntervalSince(date).rounded(.down))
        // A daemon clock slightly ahead of ours is not worth a confusing "in 1s".
        return elapsed < 1 ? "just now" : "\(duration(elapsed)) ago"
    }

    /// A --timeout value as a user typed it: "30s", "2.5s".
    static func seconds(_ value: Double) -> String {
        value.rounded() == value && abs(value) < 1e15 ? "\(Int64(value))s" : "\(value)s"  // conversion: whole and below 1e15, checked on this line
    }

    /// Without leading and trailing white space (FoundationEssentials has no `trimmingCharacters`).
    static func trim<S: StringProtocol>(_ text: S) -> String {
        guard let first = text.firstIndex(where: { !$0.isWhitespace }), let last = text.lastIndex(where: { !$0.isWhitespace })
        else { return "" }
        return String(text[first...last])
    }

    /// `text` cut to `width` characters, ending in "…" when cut.
    static func truncate(_ text: String, to width: Int) -> String {
        guard width > 0 else { return "" }
        guard text.count > width else { return text }
        return String(text.prefix(width - 1)) + "…"
    }

    static func padded(_ text: String, to width: Int) -> String {
        text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
    }
}
