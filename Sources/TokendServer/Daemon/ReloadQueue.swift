import Synchronization
import TokendCore
import TokendProtocol

/// Reloads of the configuration file, one at a time, whoever asks: SIGHUP (answered to no one)
/// and the `reload` op (answered with the result). A request made while a reload runs gets the
/// next one, never the running one's result: that one may have read the file before the edit
/// the client made. Requests waiting together share one reload.
final class ReloadQueue: ConfigurationService {
    typealias Outcome = Result<ReloadSummary, TokendError>

    private struct State {
        var waiters: [CheckedContinuation<Outcome, Never>] = []
        /// Set once `run` has ended: nothing will reload any more.
        var stopped = false
    }

    private let state = Mutex(State())
    /// One pending wake-up at most: requests made while a reload runs coalesce into one more.
    private let wakeups: AsyncStream<Void>
    private let wake: AsyncStream<Void>.Continuation

    init() {
        (wakeups, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// SIGHUP: a reload as soon as the one running (if any) is done.
    func request() {
        wake.yield()
    }

    /// The `reload` op: a reload that starts after this call, and its outcome.
    func reload() async -> Outcome {
        await withCheckedContinuation { continuation in
            let stopped = state.withLock { state in
                if !state.stopped { state.waiters.append(continuation) }
                return state.stopped
            }
            if stopped {
                continuation.resume(returning: .failure(Advice.shuttingDown))
            } else {
                wake.yield()
            }
        }
    }

    /// Runs `perform` for each wake-up until the task is cancelled (graceful shutdown); then
    /// every request still waiting is told that tokend is stopping.
    func run(_ perform: () async -> Outcome) async {
        for await _ in wakeups {
            let waiters = state.withLock { state in
                defer { state.waiters = [] }
                return state.waiters
            }
            let outcome = await perform()
            for waiter in waiters { waiter.resume(returning: outcome) }
        }
        let left = state.withLock { state in
            state.stopped = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in left { waiter.resume(returning: .failure(Advice.shuttingDown)) }
    }
}
