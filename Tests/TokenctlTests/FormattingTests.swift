import TokendCore
import TokendProtocol
import Testing

@testable import TokenctlKit

@Suite("Durations and text")
struct FormattingTests {
    @Test(arguments: [
        (0, "0s"), (1, "1s"), (59, "59s"), (60, "1m"), (61, "1m 1s"), (252, "4m 12s"), (3599, "59m 59s"),
        (3600, "1h"), (3660, "1h 1m"), (3661, "1h 1m"), (86_399, "23h 59m"), (86_400, "1d"), (93_600, "1d 2h"),
        (-5, "0s"),
    ])
    func duration(_ seconds: Int, _ text: String) {
        #expect(Text.duration(seconds) == text)
    }

    @Test func expiresIn() {
        #expect(Text.expiresIn(nil) == "-")
        #expect(Text.expiresIn(0) == "expired")
        #expect(Text.expiresIn(-30) == "expired")
        #expect(Text.expiresIn(252) == "4m 12s")
    }

    @Test func ago() throws {
        let now = try #require(Timestamp.parse("2025-03-01T12:00:00Z"))
        #expect(Text.ago("2025-03-01T11:59:48Z", now: now) == "12s ago")
        #expect(Text.ago("2025-03-01T10:30:00Z", now: now) == "1h 30m ago")
        #expect(Text.ago("2025-03-01T12:00:03Z", now: now) == "just now")
        #expect(Text.ago(nil, now: now) == "-")
        #expect(Text.ago("yesterday", now: now) == "yesterday")
    }

    @Test func truncate() {
        #expect(Text.truncate("abcdef", to: 6) == "abcdef")
        #expect(Text.truncate("abcdef", to: 4) == "abc…")
        #expect(Text.truncate("abcdef", to: 0) == "")
    }

    @Test func singleLine() {
        #expect(Text.singleLine("a\nb\tc\r\u{1B}") == "a b c  ")
        #expect(Text.singleLine("plain — ünïcode") == "plain — ünïcode")
    }

    @Test func trim() {
        #expect(Text.trim("  tok \t") == "tok")
        #expect(Text.trim(" \n ") == "")
    }

    @Test func seconds() {
        #expect(Text.seconds(30) == "30s")
        #expect(Text.seconds(0.5) == "0.5s")
    }
}
