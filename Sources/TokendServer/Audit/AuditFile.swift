import Logging
import TokendCore
import TokendProtocol
#if canImport(Glibc)
import Glibc
#endif

/// `audit.jsonl` in `$XDG_STATE_HOME/tokend` (0600, directory 0700), rotated by size: when a
/// batch would take the file past `Limits.fileSize`, `audit.jsonl.1` becomes `.2`, the file
/// `.1`, and a new one starts; the oldest beyond `Limits.keptFiles` goes. Only `AuditLog`'s
/// writer (under its lock) uses it.
public struct AuditFile: Sendable {
    public struct Limits: Sendable {
        /// Bytes one file may hold before it rotates.
        public var fileSize: Int
        /// Rotated files kept beside the live one.
        public var keptFiles: Int

        public init(fileSize: Int, keptFiles: Int) {
            self.fileSize = fileSize
            self.keptFiles = keptFiles
        }

        /// 8 MiB a file and 2 kept: at most 24 MiB on disk. A record is ~250 bytes, so that is
        /// about 100,000 records: weeks of a build farm's folded requests (repeats are one line),
        /// while a runaway client can never fill the disk.
        public static let standard = Limits(fileSize: 8 << 20, keptFiles: 2)
    }

    let directory: String?
    let limits: Limits
    let logger: Logger
    private var fd: Int32 = -1
    private var size = 0
    /// Said once: a directory that cannot be written must not flood the log.
    private var complained = false

    init(directory: String?, limits: Limits, logger: Logger) {
        self.directory = directory
        self.limits = limits
        self.logger = logger
    }

    var path: String? { directory.map { $0 + "/" + AuditRecord.fileName } }

    mutating func append(_ records: [AuditRecord]) {
        guard !records.isEmpty, let path else { return }
        var bytes: [UInt8] = []
        for record in records { bytes += WireCoding.encodeLine(record) }
        if fd >= 0, size > 0, size + bytes.count > limits.fileSize { rotate(path) }
        if fd < 0 { open(path) }
        guard fd >= 0 else { return }
        var written = 0
        while written < bytes.count {
            let count = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + written, $0.count - written) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else {
                complain("cannot write the audit file; records are lost until it can", path)
                Glibc.close(fd)
                fd = -1
                return
            }
            written += count
        }
        size += written
    }

    private mutating func open(_ path: String) {
        guard let directory else { return }
        // Ours and private: mkdir -p with 0700 for the parts tokend makes.
        var prefix = ""
        for part in directory.split(separator: "/") {
            prefix += "/" + part
            _ = mkdir(prefix, 0o700)
        }
        let opened = Glibc.open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard opened >= 0 else {
            complain("cannot open the audit file; records are lost until it can be", path)
            return
        }
        var info = stat()
        guard fstat(opened, &info) == 0, info.st_uid == getuid(), (info.st_mode & S_IFMT) == S_IFREG else {
            Glibc.close(opened)
            complain("the audit file is not a regular file of ours; records are lost until it is removed", path)
            return
        }
        if info.st_mode & 0o077 != 0 { fchmod(opened, 0o600) }
        fd = opened
        size = Int(info.st_size)  // conversion: off_t to Int, 64-bit both
        complained = false
    }

    private mutating func rotate(_ path: String) {
        Glibc.close(fd)
        fd = -1
        if limits.keptFiles < 1 {
            unlink(path)
        } else {
            unlink("\(path).\(limits.keptFiles)")
            for generation in stride(from: limits.keptFiles - 1, through: 1, by: -1) {
                rename("\(path).\(generation)", "\(path).\(generation + 1)")
            }
            rename(path, "\(path).1")
        }
        size = 0
    }

    private mutating func complain(_ message: String, _ path: String) {
        guard !complained else { return }
        complained = true
        logger.error("\(message)", metadata: ["path": "\(path)", "errno": "\(errno)"])
    }

    /// Closes the file (the writer ends).
    mutating func closeFile() {
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
    }
}

/// The journal's native protocol (systemd-journald.socket's /run/systemd/journal/socket): one
/// datagram of `FIELD=value` lines per record, so `journalctl --user -o json TOKEND_AUDIT=1`
/// finds them with their fields. Values are single lines (the simple form of the protocol).
struct JournalSender: Sendable {
    static let socketPath = "/run/systemd/journal/socket"

    func send(_ record: AuditRecord) {
        var fields: [(String, String)] = [
            ("MESSAGE", Self.message(record)), ("PRIORITY", record.outcome == "ok" ? "6" : "5"), ("SYSLOG_IDENTIFIER", "tokend"), ("TOKEND_AUDIT", "1"),
            ("TOKEND_CONSUMER", record.consumer), ("TOKEND_OP", record.op), ("TOKEND_OUTCOME", record.outcome),
        ]
        let optional: [(String, String?)] = [
            ("TOKEND_ACCOUNT", record.account), ("TOKEND_KIND", record.kind), ("TOKEND_AUDIENCE", record.audience), ("TOKEND_SCOPE", record.scope),
            ("TOKEND_UPSTREAM", record.upstream), ("TOKEND_REASON", record.reason), ("TOKEND_PEER_PID", record.pid.map { "\($0)" }),
            ("TOKEND_PEER_UID", record.uid.map { "\($0)" }), ("TOKEND_PEER_EXE", record.executable), ("TOKEND_PEER_UNIT", record.unit),
            ("TOKEND_PEER_CGROUP", record.cgroup), ("TOKEND_COUNT", record.count.map { "\($0)" }),
        ]
        for (name, value) in optional { if let value { fields.append((name, value)) } }
        var datagram: [UInt8] = []
        for (name, value) in fields { datagram += Array("\(name)=\(value.singleLine)\n".utf8) }
        guard let address = UnixSocketAddress(path: Self.socketPath) else { return }
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)  // conversion: C constants
        guard fd >= 0 else { return }
        defer { close(fd) }
        _ = datagram.withUnsafeBytes { bytes in address.withSockaddr { sendto(fd, bytes.baseAddress, bytes.count, 0, $0, $1) } }
    }

    static func message(_ record: AuditRecord) -> String {
        let what = [record.op, record.account, record.kind].compactMap { $0 }.joined(separator: " ")
        let who = [record.pid.map { "pid \($0)" }, record.executable, record.unit].compactMap { $0 }.joined(separator: " ")
        return "audit: \(record.consumer): \(what): \(record.outcome)" + (who.isEmpty ? "" : " (\(who))")
    }
}
