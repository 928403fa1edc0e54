import Foundation
import Testing
import TokendCore
@testable import TokendServer
import TokendTestSupport

/// `WriteBackQueue`: which deferred write-back goes next and when, on a manual clock.
@Suite struct WriteBackQueueTests {
    let t0 = ManualClock().now()

    @Test func anAccountIsWrittenAtMostOncePerInterval() {
        var queue = WriteBackQueue()
        queue.queue("a", at: t0)
        #expect(queue.take(at: t0) == "a")
        queue.wrote("a", started: t0, finished: t0)
        queue.queue("a", at: t0.addingTimeInterval(60))
        let due = t0.addingTimeInterval(WriteBackQueue.perAccountInterval)
        #expect(queue.nextDue == due)
        #expect(queue.take(at: due.addingTimeInterval(-1)) == nil)
        #expect(queue.take(at: due) == "a")
    }

    @Test func queuingTwiceKeepsTheFirstPlace() {
        var queue = WriteBackQueue()
        queue.queue("a", at: t0)
        queue.queue("b", at: t0.addingTimeInterval(1))
        queue.queue("a", at: t0.addingTimeInterval(2))
        #expect(queue.waitingInOrder == ["a", "b"])
    }

    /// Each write waits twice as long as the last took, a second at least: the keyring's share
    /// stays bounded at any number of accounts.
    @Test func writesAreSpacedByWhatTheLastOneCost() {
        var queue = WriteBackQueue()
        for name in ["a", "b", "c"] { queue.queue(name, at: t0) }
        #expect(queue.take(at: t0) == "a")
        queue.wrote("a", started: t0, finished: t0.addingTimeInterval(0.1))
        #expect(queue.nextDue == t0.addingTimeInterval(1.1))
        #expect(queue.take(at: t0.addingTimeInterval(1)) == nil)
        #expect(queue.take(at: t0.addingTimeInterval(1.1)) == "b")
        queue.wrote("b", started: t0.addingTimeInterval(1.1), finished: t0.addingTimeInterval(2.1))
        #expect(queue.nextDue == t0.addingTimeInterval(4.1))
        queue.drop("c")
        #expect(queue.isEmpty && queue.nextDue == nil)
    }
}
