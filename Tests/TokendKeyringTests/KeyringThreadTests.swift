import Dispatch
import Synchronization
import Testing
@testable import TokendKeyring

@Suite
struct KeyringThreadTests {
    /// Jobs run in order, one at a time; once one reports that the Secret Service did not answer,
    /// the jobs queued behind it are abandoned without running, and later ones run again.
    @Test func runsInOrderAndAbandonsTheJobsQueuedBehindAnUnansweredOne() {
        let thread = KeyringThread(name: "test-keyring")
        defer { thread.stop() }
        let events = Mutex<[String]>([])
        let release = DispatchSemaphore(value: 0)
        let done = DispatchSemaphore(value: 0)
        func job(_ name: String, answered: Bool = true, then: @escaping @Sendable () -> Void = {}) -> KeyringThread.Job {
            .init(
                run: { events.withLock { $0.append("\(name) ran") }; then(); return answered },
                abandon: { events.withLock { $0.append("\(name) abandoned") } })
        }

        thread.enqueue(job("first", then: { release.wait() }))
        thread.enqueue(job("second", answered: false))
        thread.enqueue(job("third"))
        thread.enqueue(job("fourth"))
        release.signal()
        // Queued after the abandonment (the thread is idle once "second" has been handled).
        let limit = DispatchTime.now() + 10
        while events.withLock({ $0.count }) < 4, DispatchTime.now() < limit { _ = DispatchSemaphore(value: 0).wait(timeout: .now() + 0.01) }
        thread.enqueue(job("fifth", then: { done.signal() }))
        #expect(done.wait(timeout: .now() + 10) == .success)
        #expect(events.withLock { $0 } == ["first ran", "second ran", "third abandoned", "fourth abandoned", "fifth ran"])
    }
}
