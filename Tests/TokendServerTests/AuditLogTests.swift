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
        #expect(later.repeats(entry))
        var other = later
        other.account = "home"
        #expect(!other.repeats(entry))
        let record = entry.record(count: 3, until: later.time)
        #expect(record.count == 3 && record.until == Timestamp.format(later.time) && record.time == Timestamp.format(time))
        #expect(entry.record(count: 1, until: time).count == nil)
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
