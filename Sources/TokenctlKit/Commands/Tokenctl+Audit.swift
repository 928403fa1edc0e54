import ArgumentParser
import TokendCore
import TokendProtocol
#if canImport(Glibc)
import Glibc
#endif

extension Tokenctl {
    /// `tokenctl audit`: what tokend recorded of who asked for what (README, "Audit"). It reads
    /// the JSON Lines file tokend writes (`$XDG_STATE_HOME/tokend/audit.jsonl` and its rotated
    /// files, oldest first), so it works whether or not tokend runs, under systemd or not.
    struct Audit: TokenctlCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show what tokend served and refused, to whom: time, consumer, op, account, outcome, peer.",
            discussion: """
                Reads $XDG_STATE_HOME/tokend/audit.jsonl (default ~/.local/state/tokend) and its \
                rotated files, oldest first. One line per record: TIME CONSUMER OP ACCOUNT KIND \
                OUTCOME, then the peer's pid, executable and unit; "xN" when N identical \
                requests in a row were folded into it. --json prints the records as they are \
                stored, one JSON object per line. Never shows a token: none is recorded.
                """)

        @Option(help: ArgumentHelp("Only records from this long ago on (90s, 15m, 2h, 7d), or since an RFC 3339 time.", valueName: "WHEN"))
        var since: String?
        @Option(help: ArgumentHelp("Only records about this account.", valueName: "ACCOUNT"))
        var account: String?
        @Option(help: ArgumentHelp("Only records of this consumer (\"main\" for the main socket).", valueName: "NAME"))
        var consumer: String?
        @Flag(help: "Print the records as JSON Lines.")
        var json = false

        /// Largest audit file read: tokend rotates at 8 MiB; a file far past that is not its.
        static let maximumFileSize = 64 << 20

        func execute(_ context: CommandContext) throws(TokenctlError) {
            var start: Date?
            if let since {
                guard let date = Self.instant(since, now: context.now()) else {
                    throw TokenctlError(.usage, "--since \(Text.singleLine(since)) is neither a duration like 15m or 2h nor an RFC 3339 time", next: "e.g. tokenctl audit --since 1h")
                }
                start = date
            }
            guard let directory = AuditRecord.directory(environment: context.environment) else {
                throw TokenctlError(.usage, "neither XDG_STATE_HOME nor HOME is set, so the audit's place is unknown", next: "set HOME (a login session does)")
            }
            let path = directory + "/" + AuditRecord.fileName
            var unreadable = 0
            var output = ""
            var found = false
            for file in ["\(path).2", "\(path).1", path] {
                guard let text = try Self.read(file) else { continue }
                found = true
                for line in text.split(separator: "\n") {
                    guard let record = AuditRecord.decode(line) else {
                        unreadable += 1
                        continue
                    }
                    guard matches(record, since: start) else { continue }
                    output += json ? String(line) + "\n" : Self.render(record)
                }
            }
            guard found else {
                context.console.writeError("tokenctl: no audit at \(path) yet; tokend writes it once it serves a request\n")
                return
            }
            try context.console.write(output)
            if unreadable > 0 { context.console.writeError("tokenctl: \(unreadable) lines of \(path) could not be read and were skipped\n") }
        }

        func matches(_ record: AuditRecord, since start: Date?) -> Bool {
            if let account, record.account != account { return false }
            if let consumer, record.consumer != consumer { return false }
            if let start {
                guard let time = Timestamp.parse(record.until ?? record.time), time >= start else { return false }
            }
            return true
        }

        /// `15m`, `2h`, `90s`, `7d` ago, or an RFC 3339 time.
        static func instant(_ text: String, now: Date) -> Date? {
            if let date = Timestamp.parse(text) { return date }
            guard let unit = text.last, let factor = ["s": 1.0, "m": 60, "h": 3600, "d": 86_400][unit] else { return nil }
            let digits = text.dropLast()
            // Bounded before conversion: at most 7 digits (over 27 years in seconds' units… of days).
            guard !digits.isEmpty, digits.count <= 7, digits.allSatisfy(\.isNumber), digits.allSatisfy(\.isASCII), let value = Double(digits) else { return nil }
            return now.addingTimeInterval(-value * factor)
        }

        static func render(_ record: AuditRecord) -> String {
            var fields = [record.time, record.consumer, record.op, record.account ?? "-", record.kind ?? "-", record.outcome]
            if let audience = record.audience { fields.append("audience=\(audience)") }
            if let scope = record.scope { fields.append("scope=\"\(scope)\"") }
            if let upstream = record.upstream { fields.append("upstream=\(upstream)") }
            if let pid = record.pid { fields.append("pid=\(pid)") }
            fields.append("exe=\(record.executable ?? "?")")
            if let unit = record.unit { fields.append("unit=\(unit)") }
            if let count = record.count, count > 1 { fields.append("x\(count)") }
            var line = fields.map(Text.singleLine).joined(separator: " ")
            if let reason = record.reason, record.outcome != "ok" { line += " (\(Text.singleLine(reason)))" }
            return line + "\n"
        }

        /// The file's text; nil when it does not exist.
        static func read(_ path: String) throws(TokenctlError) -> String? {
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else {
                if errno == ENOENT { return nil }
                throw TokenctlError(.failure, "cannot read \(path): \(String(cString: strerror(errno)))", next: "check its owner and mode (it is yours, 0600)")
            }
            defer { close(fd) }
            var bytes: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 65_536)
            while true {
                let count = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
                if count < 0, errno == EINTR { continue }
                guard count > 0 else { break }
                bytes += chunk[0..<count]
                guard bytes.count <= maximumFileSize else {
                    throw TokenctlError(.failure, "\(path) is larger than \(maximumFileSize >> 20) MiB, which tokend never writes", next: "move it aside; tokend starts a new one")
                }
            }
            return String(decoding: bytes, as: UTF8.self)
        }
    }
}
