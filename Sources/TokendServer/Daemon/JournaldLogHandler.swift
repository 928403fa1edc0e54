import Logging
import TokendCore
#if canImport(Glibc)
import Glibc
#endif

/// swift-log to stderr with sd-daemon(3) priority prefixes (`<6>` info …), which journald turns
/// into log levels when it reads a unit's stderr. One line per message; never a secret (callers
/// pass only names, states, codes and durations).
public struct JournaldLogHandler: LogHandler {
    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level
    let label: String

    public init(label: String, level: Logger.Level = .info) {
        self.label = label
        self.logLevel = level
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
        var line = "<\(Self.priority(event.level))>\(event.message)"
        if !merged.isEmpty {
            line += " " + merged.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        }
        // Newlines inside a message would forge extra journal lines.
        line = String(line.map { $0 == "\n" || $0 == "\r" ? " " : $0 }) + "\n"
        // One write(2) per line: lines from concurrent tasks never interleave mid-line.
        var bytes = Array(line.utf8)
        _ = bytes.withUnsafeMutableBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
    }
}
