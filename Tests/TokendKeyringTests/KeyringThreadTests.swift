import Dispatch
import Synchronization
import Testing
@testable import TokendKeyring

@Suite
struct KeyringThreadTests {
    /// Jobs run in order, one at a time; a job whose deadline passed while an earlier one held
    /// the thread is expired without running.
    @Test func runsInOrderAndExpiresJobsThatWaitedPastTheirDeadline() {
        let thread = KeyringThread(name: "test-keyring")
        defer { thread.stop() }
        let events = Mutex<[String]>([])
        let release = DispatchSemaphore(value: 0)
        let done = DispatchSemaphore(value: 0)
        let far = DispatchTime.now() + 60
        // The second job's deadline passes while the first one blocks.
        let soon = DispatchTime.now() + 0.05

        thread.enqueue(.init(deadline: far, run: { events.withLock { $0.append("first") }; release.wait() }, expire: {}))
        thread.enqueue(
            .init(deadline: soon, run: { events.withLock { $0.append("second ran") } },
                  expire: { events.withLock { $0.append("second expired") } }))
        thread.enqueue(.init(deadline: far, run: { events.withLock { $0.append("third") }; done.signal() }, expire: {}))

        while DispatchTime.now() <= soon { _ = DispatchSemaphore(value: 0).wait(timeout: soon) }
        release.signal()
        #expect(done.wait(timeout: .now() + 10) == .success)
        #expect(events.withLock { $0 } == ["first", "second expired", "third"])
    }
}
