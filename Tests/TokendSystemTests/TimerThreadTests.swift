import Foundation
import Synchronization
import Testing
import TokendCore
@testable import TokendSystem

/// The process's timer thread on the real kernel clocks. Deadlines are tens of milliseconds
/// apart and only their order is asserted, never how late a timer fired.
@Suite struct TimerThreadTests {
    let thread = TimerThread()

    /// Waits until `delay` has passed on the thread: a timer of its own, so every timer due
    /// earlier has fired by the time this returns.
    func passed(_ delay: Double) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            _ = thread.schedule(after: delay) { continuation.resume() }
        }
    }

    @Test func timersFireOnceInTheOrderOfTheirDeadlines() async {
        let fired = Mutex<[String]>([])
        // Absolute deadlines, so that how long scheduling takes does not reorder them.
        let timers = SystemTimerSource(clock: SystemWallClock(), thread: thread)
        let base = Date().addingTimeInterval(0.5)
        for (name, deadline) in [("third", base + 0.06), ("second", base + 0.03), ("first", base), ("past", Date() - 5)] {
            _ = timers.schedule(at: deadline) { fired.withLock { $0.append(name) } }
        }
        let scheduledInTime = Date() < base
        await passed(base.timeIntervalSinceNow + 0.09)
        let order = fired.withLock { $0 }
        #expect(order.sorted() == ["first", "past", "second", "third"])
        // A machine too loaded to schedule four timers in half a second can fire the later ones
        // as they come; the order is only defined for deadlines still ahead when all were armed.
        if scheduledInTime { #expect(order == ["past", "first", "second", "third"]) }
    }

    @Test func aCancelledTimerNeverFires() async {
        let fired = Atomic(0)
        let cancelled = thread.schedule(after: 0.02) { fired.add(1, ordering: .relaxed) }
        cancelled.cancel()
        cancelled.cancel()  // twice: nothing
        await passed(0.05)
        #expect(fired.load(ordering: .relaxed) == 0)
    }

    @Test func manyCancelledTimersLeaveTheLiveOnesOnTime() async {
        let fired = Atomic(0)
        // Far-future timers, cancelled: enough to make the heaps drop their dead entries.
        for _ in 0..<500 { thread.schedule(after: 3600) { fired.add(100, ordering: .relaxed) }.cancel() }
        for delay in [0.01, 0.02, 0.03] { _ = thread.schedule(after: delay) { fired.add(1, ordering: .relaxed) } }
        await passed(0.04)
        #expect(fired.load(ordering: .relaxed) == 3)
    }

    @Test func delaysFromOutsideAreBoundedNotTrapped() async {
        let fired = Atomic(0)
        for delay in [Double.infinity, .greatestFiniteMagnitude, .nan, -.infinity] {
            _ = thread.schedule(after: delay) { fired.add(1, ordering: .relaxed) }
        }
        await passed(0.02)
        // NaN and minus infinity count as now; the huge ones as ten years.
        #expect(fired.load(ordering: .relaxed) == 2)
    }

    @Test func theHeapKeepsItsOrderThroughPopsAndCompaction() {
        var heap = DeadlineHeap()
        let deadlines: [Int64] = [50, 10, 40, 10, 30, 20, 60, 0]
        for (id, deadline) in deadlines.enumerated() { heap.push(deadline, UInt64(id)) }
        heap.keep { $0 % 2 == 0 }  // ids 0, 2, 4, 6: deadlines 50, 40, 30, 60
        var order: [Int64] = []
        while let top = heap.top {
            order.append(top.deadline)
            heap.pop()
        }
        #expect(order == [30, 40, 50, 60])
    }
}
