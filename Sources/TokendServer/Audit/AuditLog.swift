import CTokendShims
import Logging
import Synchronization
import TokendCore
import TokendProtocol
import TokendSystem
#if canImport(Glibc)
import Glibc
#endif

/// The audit (README, "Audit"): every served token, refusal and management call, recorded by the
/// thread that answered it and written by a thread of its own, so that recording on the main
/// socket's fast path is a clock reading, a lock and a count (a repeat) or an append and, when
/// the buffer was empty, one byte to a pipe. The
/// writer reads what the answering thread did not (a main-socket peer's executable and cgroup),
/// folds repeats, and appends JSON Lines to `AuditFile` (and the journal under systemd).
public final class AuditLog: Sendable {
    /// Entries waiting for the writer. Beyond this they are counted and dropped, and the count is
    /// written as a record of its own: a flood of requests must not grow the daemon's memory (at
    /// ~200 bytes an entry, 8192 is under 2 MB), and a writer this far behind is a disk problem.
    public static let maximumPending = 8192
    /// A refusal's message in a record, cut: tokend's own sentences are far shorter.
    static let maximumReasonLength = 512
    /// How long the writer, once woken, lets records gather before it takes them: a burst (a
    /// build farm's `tokenctl token` calls, a persistent client's lines) becomes a few folded
    /// lines and one write, and the listening thread wakes it at most ten times a second.
    /// Nothing waits on it: a record is visible in the file this much later.
    static let batchWindow: Int = 100_000_000  // nanoseconds
    /// How many entries back a repeat is looked for: clients of a few accounts interleave.
    static let foldWindow = 16

    struct Pending {
        var entries: [AuditEntry] = []
        /// How many identical entries each of `entries` stands for (the folds).
        var counts: [Int] = []
        var lastTimes: [Date] = []
        var dropped = 0
        var stopped = false

        /// Counts a repeat of one of the last `foldWindow` entries (the one before first: a
        /// persistent client repeats its own line); false when none matches. The entries are
        /// compared where they lie, through the buffer (`AuditEntry.matches`).
        mutating func fold(
            at time: Date, _ caller: Caller, _ op: String, _ account: String?, _ kind: TokenKind?, _ audience: String?, _ scope: String?, _ upstream: String?,
            _ failure: TokendError?
        ) -> Bool {
            let repeated = entries.withUnsafeBufferPointer { entries -> Int? in
                var index = entries.count - 1
                while index >= max(0, entries.count - AuditLog.foldWindow) {
                    if AuditEntry.matches(entries.baseAddress! + index, caller, op, account, kind, audience, scope, upstream, failure) { return index }
                    index -= 1
                }
                return nil
            }
            guard let repeated else { return false }
            counts[repeated] += 1
            lastTimes[repeated] = time
            return true
        }
    }

    private let pending = Mutex(Pending())
    /// Serialises writing: the writer thread's drains and `flush()`'s.
    private let writing: Mutex<AuditFile>
    private let journal: JournalSender?
    /// The pipe that wakes the writer: its read end is the writer's, its write end non-blocking.
    private let wakeReader: Int32
    private let wakeWriter: Int32
    private let clock: any WallClock
    private let logger: Logger

    /// Writes to `directory/audit.jsonl` (nil: nowhere, the records are only counted) and, when
    /// `journal`, to the journal too.
    public init(directory: String?, journal: Bool, clock: any WallClock, logger: Logger, limits: AuditFile.Limits = .standard) {
        var pipe: [Int32] = [-1, -1]
        if tokend_pipe_cloexec(&pipe) != 0 { pipe = [-1, -1] }
        if pipe[1] >= 0 { _ = fcntl(pipe[1], F_SETFL, fcntl(pipe[1], F_GETFL) | O_NONBLOCK) }
        wakeReader = pipe[0]
        wakeWriter = pipe[1]
        writing = Mutex(AuditFile(directory: directory, limits: limits, logger: logger))
        self.journal = journal ? JournalSender() : nil
        self.clock = clock
        self.logger = logger
        if wakeReader >= 0 {
            DedicatedThread.start("tokend-audit") { [self] in runWriter() }
        } else {
            logger.error("cannot create the audit writer's pipe; audit records are written only when tokend stops", metadata: ["errno": "\(errno)"])
        }
    }

    /// "Now" for an entry.
    public func now() -> Date { clock.now() }

    /// Records `entry`. Never blocks on I/O: the writer thread writes it.
    public func record(_ entry: AuditEntry) {
        pending.withLock { pending in
            guard !pending.stopped,
                  !pending.fold(at: entry.time, entry.caller, entry.op, entry.account, entry.kind, entry.audience, entry.scope, entry.upstream, entry.failure)
            else { return }
            append(entry, to: &pending)
        }
    }

    /// Records a request's answer, now, from its parts as the answering thread holds them (the
    /// main socket's fast path: `RequestRouter`). A repeat of an entry still waiting, a
    /// persistent client's next line, is a comparison and a count: no entry is built, copied or
    /// freed for it. Never blocks on I/O.
    public func record(
        _ caller: Caller, op: String, account: String? = nil, kind: TokenKind? = nil, audience: String? = nil, scope: String? = nil, upstream: String? = nil,
        failure: TokendError? = nil
    ) {
        let time = clock.now()
        pending.withLock { pending in
            guard !pending.stopped, !pending.fold(at: time, caller, op, account, kind, audience, scope, upstream, failure) else { return }
            append(AuditEntry(time: time, caller: caller, op: op, account: account, kind: kind, audience: audience, scope: scope, upstream: upstream, failure: failure), to: &pending)
        }
    }

    /// A new entry for the writer (under the lock); dropped and counted past `maximumPending`.
    private func append(_ entry: AuditEntry, to pending: inout Pending) {
        guard pending.entries.count < Self.maximumPending else {
            pending.dropped += 1
            return
        }
        pending.entries.append(entry)
        pending.counts.append(1)
        pending.lastTimes.append(entry.time)
        // Under the lock: the writer closes the pipe under it once stopped, so the number
        // written to is never a reused one. Non-blocking: a full pipe already wakes it.
        if pending.entries.count == 1 { wake(1) }
    }

    private func wake(_ byte: UInt8) {
        var byte = byte
        _ = write(wakeWriter, &byte, 1)
    }

    /// Writes everything recorded so far, on the caller's thread; returns once it is written.
    public func flush() {
        let taken = pending.withLock { pending -> Pending in
            // Handed over with their storage: kept (`keepingCapacity`), the arrays held room for
            // the largest batch ever seen, up to `maximumPending` entries, for good (issue 47).
            defer {
                pending.entries = []
                pending.counts = []
                pending.lastTimes = []
                pending.dropped = 0
            }
            return pending
        }
        guard !taken.entries.isEmpty || taken.dropped > 0 else { return }
        var lines: [AuditRecord] = []
        // One /proc read per peer per batch: a persistent client's requests share it.
        var identities: [Int32: PeerIdentity] = [:]
        for (index, entry) in taken.entries.enumerated() {
            var peer = entry.caller.peer
            if peer.pid > 0, !peer.isResolved {
                peer = identities[peer.pid] ?? peer.resolved()
                identities[peer.pid] = peer
            }
            lines.append(entry.record(count: taken.counts[index], until: taken.lastTimes[index], peer: peer))
        }
        if taken.dropped > 0 {
            var record = AuditRecord(time: Timestamp.format(clock.now()), consumer: AuditRecord.mainConsumer, op: "audit", outcome: "dropped")
            record.count = taken.dropped
            record.reason = "\(taken.dropped) records were dropped: more than \(Self.maximumPending) waited for the writer"
            lines.append(record)
        }
        writing.withLock { $0.append(lines) }
        if let journal { for line in lines { journal.send(line) } }
    }

    /// Stops the writer after writing what is pending. Records after this are not kept.
    public func stop() {
        flush()
        pending.withLock { pending in
            guard !pending.stopped else { return }
            pending.stopped = true
            wake(0)
        }
    }

    private func runWriter() {
        var bytes = [UInt8](repeating: 0, count: 64)
        while true {
            let count = bytes.withUnsafeMutableBytes { read(wakeReader, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            if count > 0, !pending.withLock({ $0.stopped }) {
                var window = timespec(tv_sec: 0, tv_nsec: Self.batchWindow)
                var left = timespec()
                while nanosleep(&window, &left) != 0, errno == EINTR { window = left }
            }
            flush()
            if count <= 0 || pending.withLock({ $0.stopped }) { break }
        }
        pending.withLock { _ in
            close(wakeReader)
            close(wakeWriter)
        }
    }
}
