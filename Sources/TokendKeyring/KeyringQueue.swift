import CLibsecret
import Synchronization
import TokendCore

/// The keyring operations of one store, on their own thread, in the order they were asked for,
/// each with a deadline on the Secret Service's own answer.
///
/// The deadline starts when the operation starts on the thread, not when it is queued: a restore
/// of a thousand stored sessions queues a thousand reads, and the last must not time out because
/// the others took a few seconds. Other callers wait at most one deadline in the queue too, and
/// are then answered `.queued` (a busy keyring, not a down one). When an operation does time out (a frozen Secret Service), the
/// operations queued behind it answer `.timedOut` at once instead of one deadline each.
/// At most one write per account waits in the queue: a newer write replaces a queued older one,
/// whose caller gets the newer write's answer (only the newest tokens matter). A write's caller
/// waits at most one deadline in the queue too: a refresh must not hang on a keyring that is busy
/// (gnome-keyring rewrites its whole file for every write: with 1,000 items, ~5 writes a
/// second here); it is answered `.queued`, and the write stays queued and still happens.
final class KeyringQueue: Sendable {
    /// Per-operation deadline, in seconds, counted from the operation's start on the thread.
    let timeout: Double
    /// Where the deadlines are armed and read: the daemon's timers, or a test's manual clock.
    private let clock: any WallClock
    private let timers: any TimerSource
    private let thread: KeyringThread

    /// A write waiting in the queue that a newer write for its account may still replace: none
    /// other operation for that account was queued after it, and it has not started.
    private final class QueuedWrite: Sendable {
        struct State {
            var payload: String
            var callers: [PendingOperation<Void>]
            /// Each caller's wait in the queue, cancelled when the write starts: an idle daemon
            /// must not wake for a deadline that can no longer matter.
            var queueDeadlines: [TimerHandle] = []
        }
        let state: Mutex<State>
        init(payload: String, caller: PendingOperation<Void>) {
            state = Mutex(State(payload: payload, callers: [caller]))
        }
    }

    private let replaceableWrites = Mutex<[String: QueuedWrite]>([:])
    private let waiting = Mutex(0)

    /// How many callers wait for an operation that has not started yet (tests wait on it).
    var waitingCallers: Int { waiting.withLock { $0 } }

    init(
        name: String, timeout: Double, clock: any WallClock, timers: any TimerSource, tearDown: @escaping @Sendable () -> Void = {}
    ) {
        self.timeout = timeout
        self.clock = clock
        self.timers = timers
        thread = KeyringThread(name: name, tearDown: tearDown)
    }

    /// Lets the thread finish what is queued, then end.
    func stop() { thread.stop() }

    /// Queues `body` before the first suspension (so the order of calls from one actor is kept)
    /// and waits for its result or its deadline. `account` names the item it touches, if one: a
    /// queued write for that account then stays where it is, ahead of this operation.
    /// With `waitsOutTheQueue` false, a caller still queued after one deadline is answered
    /// `.queued` and the operation is dropped: only the reads of stored sessions wait for the
    /// whole queue (a start-up restore must not fail for waiting); a shutdown's last call, a
    /// probe or a delete must not hang behind a busy keyring.
    func perform<Success: Sendable>(
        account: String?,
        waitsOutTheQueue: Bool = false,
        isolation: isolated (any Actor)?,
        _ body: @escaping @Sendable (UnsafeMutablePointer<GCancellable>) -> Result<Success, KeyringError>
    ) async -> Result<Success, KeyringError> {
        await withCheckedContinuation(isolation: isolation) { continuation in
            let pending = PendingOperation(continuation)
            let queueDeadline = waitsOutTheQueue ? nil : armQueueDeadline(for: pending, "the operation is dropped")
            if let account { replaceableWrites.withLock { _ = $0.removeValue(forKey: account) } }
            waiting.withLock { $0 += 1 }
            thread.enqueue(
                KeyringThread.Job(
                    run: { [self] in
                        waiting.withLock { $0 -= 1 }
                        let cancellable = CancellableHandle()
                        queueDeadline?.cancel()
                        guard pending.begin(cancellable) else { return true }
                        let deadline = armDeadline(for: [pending])
                        defer { deadline.cancel() }  // answered: the timer has nothing left to do
                        return pending.finish(body(cancellable.pointer))
                    },
                    abandon: { [self] in
                        waiting.withLock { $0 -= 1 }
                        queueDeadline?.cancel()
                        pending.expire(queuedBehindTimeout)
                    }))
        }
    }

    /// Queues a write of `payload` to `account`'s item, or hands `payload` to the write for that
    /// account already waiting in the queue; answers with that write's result.
    func write(
        account: String,
        payload: String,
        isolation: isolated (any Actor)?,
        _ body: @escaping @Sendable (String, UnsafeMutablePointer<GCancellable>) -> Result<Void, KeyringError>
    ) async -> Result<Void, KeyringError> {
        await withCheckedContinuation(isolation: isolation) { continuation in
            let pending = PendingOperation(continuation)
            waiting.withLock { $0 += 1 }
            let queueDeadline = armQueueDeadline(for: pending, "the write stays queued and will still happen")
            let queued: QueuedWrite? = replaceableWrites.withLock { writes in
                if let waiting = writes[account] {
                    waiting.state.withLock {
                        $0.payload = payload
                        $0.callers.append(pending)
                        $0.queueDeadlines.append(queueDeadline)
                    }
                    return nil
                }
                let write = QueuedWrite(payload: payload, caller: pending)
                write.state.withLock { $0.queueDeadlines.append(queueDeadline) }
                writes[account] = write
                return write
            }
            guard let queued else { return }
            thread.enqueue(
                KeyringThread.Job(
                    run: { [self] in
                        // Started: from now on a newer write queues behind this one.
                        replaceableWrites.withLock { if $0[account] === queued { $0[account] = nil } }
                        let (payload, callers, queueDeadlines) = queued.state.withLock { ($0.payload, $0.callers, $0.queueDeadlines) }
                        for deadline in queueDeadlines { deadline.cancel() }
                        waiting.withLock { $0 -= callers.count }
                        let cancellable = CancellableHandle()
                        // Written even when every caller stopped waiting: these are the newest tokens.
                        let live = callers.filter { $0.begin(cancellable) }
                        let deadline = clock.now().addingTimeInterval(timeout)
                        let callersDeadline = armDeadline(for: live)
                        // The call's own deadline, whether or not anyone still waits for it.
                        let cancelAtDeadline = timers.schedule(at: deadline) { cancellable.cancel() }
                        let result = body(payload, cancellable.pointer)
                        for caller in live { caller.finish(result) }
                        callersDeadline.cancel()
                        let inTime = clock.now() < deadline
                        if inTime { cancelAtDeadline.cancel() }
                        return inTime
                    },
                    abandon: { [self] in
                        replaceableWrites.withLock { if $0[account] === queued { $0[account] = nil } }
                        let (callers, queueDeadlines) = queued.state.withLock { ($0.callers, $0.queueDeadlines) }
                        for deadline in queueDeadlines { deadline.cancel() }
                        waiting.withLock { $0 -= callers.count }
                        for caller in callers { caller.expire(queuedBehindTimeout) }
                    }))
        }
    }

    private func armQueueDeadline<Success>(for caller: PendingOperation<Success>, _ outcome: String) -> TimerHandle {
        let refusal = KeyringError(.queued, "still queued behind other keyring operations after \(timeout) s; \(outcome)")
        return timers.schedule(at: clock.now().addingTimeInterval(timeout)) { caller.expireIfWaiting(refusal) }
    }

    private func armDeadline<Success>(for callers: [PendingOperation<Success>]) -> TimerHandle {
        let timedOut = KeyringError(.timedOut, "the Secret Service did not answer within \(timeout) s")
        return timers.schedule(at: clock.now().addingTimeInterval(timeout)) {
            for caller in callers { caller.expire(timedOut) }
        }
    }

    private var queuedBehindTimeout: KeyringError {
        KeyringError(.timedOut, "queued behind a keyring call the Secret Service did not answer within \(timeout) s")
    }
}
