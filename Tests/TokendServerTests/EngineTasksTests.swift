import Synchronization
import Testing
@testable import TokendServer

@Suite struct EngineTasksTests {
    /// Shutdown closes the engine's tasks: nothing new starts, and what runs (a refresh whose
    /// rotated token must reach the keyring) finishes, uncancelled.
    @Test func closingTakesNoNewWorkAndLetsRunningWorkFinish() async {
        let tasks = EngineTasks()
        let (gate, opener) = AsyncStream<Void>.makeStream()
        let ran = Atomic<Int>(0)
        let cancelled = Atomic<Bool>(false)
        tasks.spawn {
            for await _ in gate {}
            cancelled.store(Task.isCancelled, ordering: .relaxed)
            ran.add(1, ordering: .relaxed)
        }
        tasks.close()
        tasks.spawn { ran.add(100, ordering: .relaxed) }
        opener.finish()
        await tasks.drained()
        #expect(ran.load(ordering: .relaxed) == 1)
        #expect(cancelled.load(ordering: .relaxed) == false)
    }
}
