import Foundation
import Testing
import TokendTestSupport

/// Issue 20, item 3: an idle tokend is asleep. Nothing periodic runs in it: no recheck, and no
/// libdispatch, whose workqueue monitor wakes every second once a worker of its global queues
/// has run (docs/architecture.md, "No libdispatch in the daemon").
@Suite struct IdleTests {
    /// Context switches of each of the process's threads, by thread id, with the thread's name.
    static func switches(of pid: Int32) -> [String: (name: String, count: Int)] {
        var result: [String: (name: String, count: Int)] = [:]
        let tasks = "/proc/\(pid)/task"
        for thread in (try? FileManager.default.contentsOfDirectory(atPath: tasks)) ?? [] {
            // A thread listed but unreadable has ended in between (GLib's pool worker ends after
            // 15 s idle): it is absent, not a thread with no name and no switches.
            guard let comm = try? String(contentsOfFile: "\(tasks)/\(thread)/comm", encoding: .utf8),
                  let status = try? String(contentsOfFile: "\(tasks)/\(thread)/status", encoding: .utf8) else { continue }
            let name = comm.trimmingCharacters(in: .whitespacesAndNewlines)
            let count = status.split(separator: "\n").filter { $0.hasPrefix("voluntary_ctxt_switches") || $0.hasPrefix("nonvoluntary_ctxt_switches") }
                .compactMap { Int($0.split(separator: "\t").last ?? "") }.reduce(0, +)
            result[thread] = (name, count)
        }
        return result
    }

    /// With `keyringStalls`, the imported session's write outlasts its deadline (a frozen
    /// keyring, as under the whole suite's load): the keyring poll runs until it is stored, then
    /// nothing (CI, stop 53: tokend-timers +9 in the window when the test did not wait for that).
    @Test(arguments: [false, true]) func anIdleDaemonWakesForNothing(keyringStalls: Bool) async throws {
        try await withWorld(startDaemon: false) { world in
            // At debug, tokend says when it arms and when it runs its idle memory release: the last
            // thing it does after a burst of work (a quiet IdleMemory.quietTick after its last work).
            try await world.startDaemon(arguments: ["--log-level", "debug"])
            // Work that touches every part: a request answered on the loop, one through the
            // engine (a task), a refresh (HTTP, the keyring thread), a status.
            if keyringStalls { try world.keyring.pauseKeyring() }
            try await world.importNewUser()
            if keyringStalls {
                try await poll("the imported session waits in memory; log:\n\(world.daemonLog)") { try await world.status().unsaved == true }
                try world.keyring.resumeKeyring()
            }
            #expect(try await world.tokenctl(["token", "work"]).status == 0)
            #expect(try await world.tokenctl(["refresh", "work"]).status == 0)
            #expect(try await world.status().state == "active")
            let pid = try #require(world.daemonPID)
            // Under load a keyring write can outlast its deadline (5 s): the session then waits in
            // memory and the keyring poll (every 2 s) runs until it is stored. That is work, not
            // idling: the window opens once the status says the session is in the keyring.
            try await poll("the session is stored and the keyring usable; log:\n\(world.daemonLog)") {
                let status = try await world.status()
                return status.keyring == "available" && status.unsaved != true
            }
            // That status was the last call: the release it armed, or found armed, is the last
            // timer before the window (under the whole suite's load the burst outlasts 30 s, and
            // the release landed inside it: CI, stop 53). tokend says each arming and release at
            // debug; the window opens once the last of them said is a release.
            try await poll("tokend released its idle memory after the last call; log:\n\(world.daemonLog)") {
                world.daemonLog.split(separator: "\n").last { $0.contains("idle memory release") }?.contains("idle memory released") == true
            }
            // The audit writer writes the records of the calls above after its batch window
            // (100 ms, AuditLog.batchWindow): once it is back asleep, what it did is not idling.
            var before = Self.switches(of: pid)
            try await poll("the audit writer has written the calls above and sleeps") {
                try await Task.sleep(for: .milliseconds(300))
                let now = Self.switches(of: pid)
                defer { before = now }
                return now.filter { $0.value.name == "tokend-audit" }.mapValues(\.count) == before.filter { $0.value.name == "tokend-audit" }.mapValues(\.count)
            }
            // Not one libdispatch worker ran: its monitor would then tick for good.
            let dispatchWorkers = before.values.map(\.name).filter { $0.hasSuffix("-qos") || $0.contains("qos.") }
            #expect(dispatchWorkers.isEmpty, "libdispatch threads in tokend: \(dispatchWorkers)")
            // An observation, not a wait for an event: libdispatch's monitor would tick eight
            // times in it, and a keyring deadline left armed after its call (5 s) once. tokend's
            // own next timers (the token's refresh, the write-back) are minutes away, and the idle
            // memory release is behind.
            try await Task.sleep(for: .seconds(8))
            let after = Self.switches(of: pid)
            // Not counted: threads that wake for what others do. GLib's gdbus and gmain answer the
            // session bus, which other tests share; its thread-pool worker (libsecret's calls)
            // waits 0.5 s for more work, then ends (LibsecretClient). NIO's loops read their sockets: the
            // fake closes an idle HTTP connection after a few seconds. libdispatch's threads
            // (named after their queues, "…default-qos") and tokend's own are all counted.
            let woken = after.filter { thread, now in
                !(["gdbus", "gmain", "pool"].contains(now.name) || now.name.hasPrefix("NIO-")) && now.count != (before[thread]?.count ?? 0)
            }
            #expect(woken.isEmpty, "threads that woke while idle: \(woken.map { "\($0.value.name) (+\($0.value.count - (before[$0.key]?.count ?? 0)))" }); log:\n\(world.daemonLog)")
        }
    }

    /// Issue 47: every thread allocates from glibc's main arena (`tokend_malloc_one_arena`). A
    /// thread arena is a 64 MiB-aligned reservation (glibc arena.c, `new_heap`: HEAP_MAX_SIZE) whose
    /// used part is read-write and the rest inaccessible; the idle release never shortens its top.
    @Test func everyThreadAllocatesFromTheMainArena() async throws {
        try await withWorld { world in
            // Work on every thread that allocates: the accept loop (a served token), the engine's
            // loop (a refresh over HTTP), the keyring's threads, the audit writer (the records).
            try await world.importNewUser()
            #expect(try await world.tokenctl(["token", "work"]).status == 0)
            #expect(try await world.tokenctl(["refresh", "work"]).status == 0)
            try await poll("the audit writer has written the calls above") {
                ((try? String(contentsOfFile: world.keyring.root.appendingPathComponent("home/.local/state/tokend/audit.jsonl").path, encoding: .utf8)) ?? "").contains("\"op\":\"refresh\"")
            }
            let pid = try #require(world.daemonPID)
            let heapSize: UInt64 = 64 << 20
            let ranges = try processMappings(pid).map { fields -> (from: UInt64, to: UInt64, mode: Substring, anonymous: Bool) in
                let bounds = fields[0].split(separator: "-").map { UInt64($0, radix: 16) ?? 0 }
                return (bounds[0], bounds[1], fields[1], fields.count < 6)
            }
            let threadHeaps = zip(ranges, ranges.dropFirst() + [(0, 0, "", false)]).filter { heap, rest in
                heap.anonymous && heap.mode == "rw-p" && heap.from % heapSize == 0
                    && (heap.to - heap.from == heapSize || (rest.anonymous && rest.mode == "---p" && rest.from == heap.to && rest.to == heap.from + heapSize))
            }.map { String($0.0.from, radix: 16) }
            #expect(threadHeaps.isEmpty, "thread arenas at \(threadHeaps)")
        }
    }
}
