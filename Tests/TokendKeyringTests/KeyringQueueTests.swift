import CLibsecret
import Dispatch
import Glibc
import Synchronization
import Testing
import TokendTestSupport
@testable import TokendKeyring

/// The keyring queue's deadlines and write merging, with operations that stand in for a slow, a
/// frozen and a healthy Secret Service (the queue never looks inside them). Deadlines run on a
/// manual clock: a test decides when time passes, so a loaded machine cannot move them.
@Suite
struct KeyringQueueTests {
    static func queue(timeout: Double) -> (KeyringQueue, ManualClock) {
        let clock = ManualClock()
        return (KeyringQueue(name: "test-keyring", timeout: timeout, clock: clock, timers: clock), clock)
    }

    /// A restore queues one read per stored account. Behind a keyring that answers each in 60 ms,
    /// 50 reads take 3 s in all, longer than the 2-second deadline: each read's deadline counts
    /// from its own start, so every one answers, and none is reported timed out.
    @Test func readsQueuedBehindASlowKeyringAllAnswer() async {
        let (queue, clock) = Self.queue(timeout: 2)
        defer { queue.stop() }
        let results = await withTaskGroup(of: Result<String, KeyringError>.self) { group in
            for index in 0..<50 {
                group.addTask {
                    await queue.perform(account: "account\(index)", waitsOutTheQueue: true, isolation: nil) { _ in
                        clock.advance(by: 0.06)  // a keyring that takes 60 ms to answer
                        return .success("account\(index)")
                    }
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results.count == 50)
        #expect(results.filter { (try? $0.get()) == nil }.isEmpty, "\(results.filter { (try? $0.get()) == nil })")
    }

    /// A Secret Service that never answers: the call in flight times out and is cancelled, the
    /// operations queued behind it answer `.timedOut` at once without running, and the next
    /// operation runs again.
    @Test func operationsQueuedBehindAnUnansweredCallTimeOutTogether() async {
        let (queue, clock) = Self.queue(timeout: 20)
        defer { queue.stop() }
        let ran = Mutex(0)
        let started = Mutex(false)
        let frozen = Task {
            await queue.perform(account: "frozen", isolation: nil) { cancellable -> Result<Void, KeyringError> in
                started.withLock { $0 = true }
                // Blocks like a libsecret call does until its GCancellable is cancelled.
                let limit = DispatchTime.now() + 30
                while g_cancellable_is_cancelled(cancellable) == 0, DispatchTime.now() < limit { usleep(5_000) }
                return .failure(KeyringError(.failed, "cancelled"))
            }
        }
        await waitUntil { started.withLock { $0 } }
        var queued: [Task<Result<Void, KeyringError>, Never>] = []
        for index in 0..<10 {
            queued.append(Task { @Sendable in
                await queue.perform(account: "account\(index)", waitsOutTheQueue: true, isolation: nil) { _ -> Result<Void, KeyringError> in
                    ran.withLock { $0 += 1 }
                    return .success(())
                }
            })
        }
        await waitUntil { queue.waitingCallers == 10 }
        clock.advance(by: 20)
        #expect((await frozen.value).error?.code == .timedOut)
        for task in queued { #expect((await task.value).error?.code == .timedOut) }
        #expect(ran.withLock { $0 } == 0)
        let after = await queue.perform(account: "after", isolation: nil) { _ in .success(true) }
        #expect((try? after.get()) == true)
    }

    /// Writes for one account waiting in the queue become one write of the newest payload, and
    /// every caller gets its answer; a write queued after another operation on the same account
    /// stays behind it (a save, a read, a save: the read sees the first).
    @Test func queuedWritesOfOneAccountMergeIntoTheNewest() async {
        // No deadline is under test here: the clock never moves.
        let (queue, _) = Self.queue(timeout: 300)
        defer { queue.stop() }
        let gate = DispatchSemaphore(value: 0)
        let calls = Mutex<[String]>([])
        let started = Mutex(false)
        let blocker = Task {
            await queue.perform(account: nil, isolation: nil) { _ in
                started.withLock { $0 = true }
                gate.wait()
                return .success(())
            }
        }
        await waitUntil { started.withLock { $0 } }
        var tasks: [Task<Result<Void, KeyringError>, Never>] = []
        func enqueue(_ index: Int, _ operation: @escaping @Sendable () async -> Result<Void, KeyringError>) async {
            tasks.append(Task(operation: operation))
            await waitUntil { queue.waitingCallers == index }
        }
        func write(_ account: String, _ payload: String) -> @Sendable () async -> Result<Void, KeyringError> {
            { await queue.write(account: account, payload: payload, isolation: nil) { payload, _ in calls.withLock { $0.append("\(account)=\(payload)") }; return .success(()) } }
        }
        await enqueue(1, write("work", "1"))
        await enqueue(2, write("work", "2"))
        await enqueue(3, write("home", "1"))
        await enqueue(4, write("work", "3"))
        await enqueue(5, { await queue.perform(account: "work", isolation: nil) { _ in calls.withLock { $0.append("read work") }; return .success(()) } })
        await enqueue(6, write("work", "4"))
        await enqueue(7, write("work", "5"))
        gate.signal()
        _ = await blocker.value
        for task in tasks { #expect((try? (await task.value).get()) != nil) }
        #expect(calls.withLock { $0 } == ["work=3", "home=1", "read work", "work=5"])
    }

    /// A write that waits its whole deadline behind operations the keyring is still answering
    /// (a busy keyring, not a frozen one) is answered `.queued`, and still happens afterwards;
    /// any other operation but a read (here a probe) is answered `.queued` and dropped.
    @Test func aWriteQueuedPastItsDeadlineIsAnsweredQueuedAndStillWritten() async {
        let (queue, clock) = Self.queue(timeout: 3)
        defer { queue.stop() }
        let firstGate = DispatchSemaphore(value: 0)
        let secondGate = DispatchSemaphore(value: 0)
        let started = Mutex(0)
        let written = Mutex(false)
        let probeRan = Mutex(false)
        // Two operations the keyring answers slowly, each within its own deadline.
        let first = Self.slowOperation(on: queue, until: firstGate) { started.withLock { $0 += 1 } }  // starts at 0 s; its deadline is at 3 s
        await waitUntil { started.withLock { $0 } == 1 }
        clock.advance(by: 1)
        let second = Self.slowOperation(on: queue, until: secondGate) { started.withLock { $0 += 1 } }
        await waitUntil { queue.waitingCallers == 1 }
        let probe = Task {
            await queue.perform(account: nil, isolation: nil) { _ -> Result<Void, KeyringError> in
                probeRan.withLock { $0 = true }
                return .success(())
            }
        }
        await waitUntil { queue.waitingCallers == 2 }
        let write = Task {
            await queue.write(account: "work", payload: "newest", isolation: nil) { _, _ in
                written.withLock { $0 = true }
                return .success(())
            }
        }
        await waitUntil { queue.waitingCallers == 3 }  // the probe's and the write's queue deadlines: 4 s
        clock.advance(by: 1)
        firstGate.signal()  // answered at 2 s, in time; the second starts (its deadline: 5 s)
        await waitUntil { started.withLock { $0 } == 2 }
        clock.advance(by: 2)  // 4 s: the probe and the write have waited a whole deadline
        #expect((await write.value).error?.code == .queued)
        #expect((await probe.value).error?.code == .queued)
        #expect(written.withLock { $0 } == false, "the write is still queued")
        secondGate.signal()  // answered at 4 s, in time
        await waitUntil { written.withLock { $0 } }
        #expect(written.withLock { $0 }, "the write happens after its caller was answered")
        #expect(probeRan.withLock { $0 } == false)
        #expect((try? (await first.value).get()) != nil)
        #expect((try? (await second.value).get()) != nil)
    }

    /// An operation the keyring answers only once `gate` is signalled; `onStart` as it starts.
    static func slowOperation(
        on queue: KeyringQueue, until gate: DispatchSemaphore, onStart: @escaping @Sendable () -> Void
    ) -> Task<Result<Void, KeyringError>, Never> {
        Task {
            await queue.perform(account: nil, isolation: nil) { _ -> Result<Void, KeyringError> in
                onStart()
                _ = gate.wait(timeout: .now() + 60)  // a broken test's limit, not a wait
                return .success(())
            }
        }
    }

    /// Polls `condition` for up to 60 s: a deadline for a broken test, not a measurement.
    private func waitUntil(_ condition: () -> Bool) async {
        let limit = DispatchTime.now() + 60
        while !condition(), DispatchTime.now() < limit { try? await Task.sleep(for: .milliseconds(5)) }
    }
}

extension Result {
    fileprivate var error: Failure? {
        if case .failure(let error) = self { error } else { nil }
    }
}
