import Logging
import TokendCore
#if canImport(Glibc)
import Glibc
#endif

/// swift-log to stderr, with sd-daemon(3) priority prefixes (`<6>` info …) when journald reads
/// it (it turns them into log levels); on a terminal they would only be noise. One line per
/// message; never a secret (callers pass only names, states, codes and durations).
public struct JournaldLogHandler: LogHandler {
    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level
    let label: String
    let prefixed: Bool
    /// Where lines go: stderr, save for a daemon a test runs in its own process, whose lines go
    /// to its world's log file as a spawned tokend's stderr would.
    let descriptor: Int32

    public init(label: String, level: Logger.Level = .info, prefixed: Bool = true, descriptor: Int32 = STDERR_FILENO) {
        self.label = label
        self.logLevel = level
        self.prefixed = prefixed
        self.descriptor = descriptor
    }

    /// Whether stderr is the journal: systemd sets JOURNAL_STREAM to its "device:inode"
    /// (systemd.exec(5)); a child that inherited the variable but writes elsewhere must not match.
    public static func stderrIsJournal(_ environment: [String: String]) -> Bool {
        let parts = environment["JOURNAL_STREAM"]?.split(separator: ":") ?? []
        guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]) else { return false }  // conversion: failable parses
        var status = stat()
        guard fstat(STDERR_FILENO, &status) == 0 else { return false }
        return UInt64(status.st_dev) == device && UInt64(status.st_ino) == inode  // conversion: dev_t and ino_t are 64-bit unsigned
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    /// RFC 5424 severities, as sd-daemon(3) expects them.
    static func priority(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: 7
        case .info: 6
        case .notice: 5
        case .warning: 4
        case .error: 3
        case .critical: 2
        }
    }

    public func log(event: LogEvent) {
        var merged = metadata
        if let extra = event.metadata { merged.merge(extra) { $1 } }
        var line = prefixed ? "<\(Self.priority(event.level))>\(event.message)" : "\(event.message)"
        if !merged.isEmpty {
            line += " " + merged.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        }
        // Newlines inside a message would forge extra journal lines.
        line = String(line.map { $0 == "\n" || $0 == "\r" ? " " : $0 }) + "\n"
        // One write(2) per line: lines from concurrent tasks never interleave mid-line.
        var bytes = Array(line.utf8)
        _ = bytes.withUnsafeMutableBytes { write(descriptor, $0.baseAddress, $0.count) }
    }
}
