/// The work an engine starts in the background (a refresh's HTTP call, a timer's hop into the
/// actor), run as children of one task the engine owns instead of as free `Task`s.
///
/// `close()` (at shutdown) takes no new work; what runs is let finish, not cancelled: a refresh
/// whose answer rotated the refresh token must still reach the keyring.
final class EngineTasks: Sendable {
    typealias Job = @Sendable () async -> Void

    private let jobs: AsyncStream<Job>.Continuation
    private let runner: Task<Void, Never>

    init() {
        let (stream, jobs) = AsyncStream.makeStream(of: Job.self)
        self.jobs = jobs
        runner = Task {
            await withDiscardingTaskGroup { group in
                for await job in stream { group.addTask { await job() } }
            }
        }
    }

    /// An engine dropped without `shutdown()` (a test's) ends its runner too.
    deinit {
        jobs.finish()
    }

    /// Runs `job` concurrently with everything else; dropped once closed.
    func spawn(_ job: @escaping Job) {
        jobs.yield(job)
    }

    /// Takes no more work; returns at once.
    func close() {
        jobs.finish()
    }

    /// Returns when every job started before `close()` has finished.
    func drained() async {
        await runner.value
    }
}
