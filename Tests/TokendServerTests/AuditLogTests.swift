import Foundation
import Logging
import Testing
import TokendCore
import TokendProtocol
@testable import TokendServer
import TokendTestClock
import TokendTestSupport

/// The audit (issue 49 item 2): what a record holds, repeats folded, the file's mode, rotation
/// under its size bound, and the peer's executable and cgroup read from /proc.
@Suite struct AuditLogTests {
    static let logger = Logger(label: "audit-test")

    func records(_ path: String) throws -> [AuditRecord] {
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        return try text.split(separator: "\n").map { try JSONDecoder().decode(AuditRecord.self, from: Data($0.utf8)) }
    }

    @Test func recordsAreWrittenWithThePeerAndFolded() throws {
        let directory = try TemporaryDirectory()
        defer { try? directory.remove() }
        let clock = ManualClock()
        let log = AuditLog(directory: directory.appending("state/tokend"), journal: false, clock: clock, logger: Self.logger)
        defer { log.stop() }
        let me = PeerIdentity(pid: getpid(), uid: getuid(), gid: getgid())
        let main = Caller(consumer: nil, peer: me)
        for _ in 0..<3 {
            log.record(AuditEntry(time: clock.now(), caller: main, op: "token", account: "work", kind: .id))
            _ = clock.advance(by: 1)
        }
        let refusal = TokendError(.forbidden, "consumer \"build\" may not use login")
        log.record(AuditEntry(time: clock.now(), caller: Caller(consumer: "build", peer: me.resolved()), op: "login", account: "work", failure: refusal))
        log.flush()
        let path = directory.appending("state/tokend/audit.jsonl")
        let written = try records(path)
        // Repeats waiting together fold into one line; the writer thread may have taken the
        // first before the others came, so the counts, not the lines, add up to three.
        let served = written.filter { $0.op == "token" }
        #expect(served.map { $0.count ?? 1 }.reduce(0, +) == 3, "\(written)")
        #expect(served.allSatisfy { ($0.count ?? 1) == 1 ? $0.until == nil : $0.until != nil })
        let first = try #require(served.first)
        #expect(first.consumer == "main" && first.account == "work" && first.kind == "id" && first.outcome == "ok")
        #expect(first.pid == getpid() && first.uid == getuid())
        // The main socket's peer is read from /proc by the writer: this very process.
        let executable = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        #expect(first.executable == executable)
        #expect(first.cgroup != nil)
        let refused = try #require(written.last)
        #expect(refused.consumer == "build" && refused.op == "login" && refused.outcome == "forbidden" && refused.reason == refusal.message && refused.count == nil)
        var info = stat()
        #expect(stat(path, &info) == 0 && info.st_mode & 0o777 == 0o600)
        #expect(stat(directory.appending("state/tokend"), &info) == 0 && info.st_mode & 0o777 == 0o700)
    }

    /// A repeat folds into the entry still waiting before it (what the writer finds in one batch).
    @Test func repeatsFold() {
        let time = Date(timeIntervalSince1970: 1_800_000_000)
        let entry = AuditEntry(time: time, caller: .unknown, op: "token", account: "work", kind: .id)
        var later = entry
        later.time = time.addingTimeInterval(5)
        // Equal but for the time: the parts the answering thread compares (`matches`).
        func folds(_ next: AuditEntry) -> Bool {
            withUnsafePointer(to: entry) { AuditEntry.matches($0, next.caller, next.op, next.account, next.kind, next.audience, next.scope, next.upstream, next.failure) }
        }
        #expect(folds(later))
        var other = later
        other.account = "home"
        #expect(!folds(other))
        let record = entry.record(count: 3, until: later.time)
        #expect(record.count == 3 && record.until == Timestamp.format(later.time) && record.time == Timestamp.format(time))
        #expect(entry.record(count: 1, until: time).count == nil)
    }

    /// The answering thread's fast path compares a request's parts with the entries waiting
    /// (`Pending.fold`): a repeat from the same connection, or another connection of the same
    /// process, only counts; another account, consumer or outcome, or an entry more than
    /// `foldWindow` back, does not.
    @Test func partsFoldIntoTheEntriesWaiting() {
        let time = Date(timeIntervalSince1970: 1_800_000_000)
        let later = time.addingTimeInterval(2)
        let me = PeerIdentity(pid: 4242, uid: 1000, gid: 1000)
        let connection = Caller(consumer: nil, peer: me)
        var pending = AuditLog.Pending()
        pending.entries = [AuditEntry(time: time, caller: connection, op: "token", account: "work", kind: .id)]
        pending.counts = [1]
        pending.lastTimes = [time]
        let folds = [
            pending.fold(at: later, connection, "token", "work", .id, nil, nil, nil, nil),
            pending.fold(at: later, Caller(consumer: nil, peer: me), "token", "work", .id, nil, nil, nil, nil),
            pending.fold(at: later, connection, "token", "home", .id, nil, nil, nil, nil),
            pending.fold(at: later, Caller(consumer: "build", peer: me), "token", "work", .id, nil, nil, nil, nil),
            pending.fold(at: later, Caller(consumer: nil, peer: PeerIdentity(pid: 4243, uid: 1000, gid: 1000)), "token", "work", .id, nil, nil, nil, nil),
            pending.fold(at: later, connection, "token", "work", .id, nil, nil, nil, TokendError(.forbidden, "no")),
        ]
        #expect(folds == [true, true, false, false, false, false])
        #expect(pending.counts == [3] && pending.lastTimes == [later])
        for index in 0..<AuditLog.foldWindow {
            pending.entries.append(AuditEntry(time: time, caller: connection, op: "token", account: "other-\(index)"))
            pending.counts.append(1)
            pending.lastTimes.append(time)
        }
        let beyondTheWindow = pending.fold(at: later, connection, "token", "work", .id, nil, nil, nil, nil)
        #expect(!beyondTheWindow)
    }

    @Test func filesRotateUnderTheirBound() throws {
        let directory = try TemporaryDirectory()
        defer { try? directory.remove() }
        let clock = ManualClock()
        let log = AuditLog(directory: directory.path, journal: false, clock: clock, logger: Self.logger, limits: AuditFile.Limits(fileSize: 2000, keptFiles: 2))
        defer { log.stop() }
        for index in 0..<90 {
            // Distinct accounts: nothing folds.
            log.record(AuditEntry(time: clock.now(), caller: .unknown, op: "token", account: "account-\(index)"))
            log.flush()
        }
        let path = directory.appending("audit.jsonl")
        var total = 0
        for file in [path, path + ".1", path + ".2"] {
            var info = stat()
            #expect(stat(file, &info) == 0, "\(file)")
            #expect(Int(info.st_size) <= 2000)
            total += try records(file).count
        }
        #expect(!FileManager.default.fileExists(atPath: path + ".3"))
        #expect(total < 90 && total > 20, "the oldest went: \(total)")
        #expect(try records(path).last?.account == "account-89")
    }

    /// The writer thread writes without a flush: a record shows up on its own.
    @Test func theWriterWritesOnItsOwn() async throws {
        let directory = try TemporaryDirectory()
        defer { try? directory.remove() }
        let log = AuditLog(directory: directory.path, journal: false, clock: ManualClock(), logger: Self.logger)
        defer { log.stop() }
        log.record(AuditEntry(time: Date(), caller: .unknown, op: "logout", account: "work"))
        try await TokendTestSupport.poll("the writer wrote the record") { (try? records(directory.appending("audit.jsonl")).count) == 1 }
    }

    @Test func unitsFromCgroupPaths() {
        #expect(PeerIdentity.unit(ofCgroup: "/user.slice/user-1000.slice/user@1000.service/app.slice/app-build.scope") == "app-build.scope")
        #expect(PeerIdentity.unit(ofCgroup: "/user.slice/user-1000.slice/user@1000.service/app.slice/tokend.service") == "tokend.service")
        #expect(PeerIdentity.unit(ofCgroup: "/user.slice") == nil)
        var peer = PeerIdentity(pid: 1, uid: 0, gid: 0, cgroup: "/user.slice/app.slice/app-build.scope/sub")
        #expect(peer.isInside(unit: "app-build.scope") && !peer.isInside(unit: "app-build") && !peer.isInside(unit: "other.scope"))
        peer.cgroup = nil
        #expect(!peer.isInside(unit: "app-build.scope"))
    }
}
