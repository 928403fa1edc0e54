import CTokendShims
import Logging
import Synchronization
import TokendCore

/// Hands back what an idle daemon holds for nothing (docs/architecture.md, "Memory at idle"):
/// once start-up is done, and after each burst of work, once it has been quiet for a whole
/// `quietTick` (so `quietTick` to twice that after its last work), or `longestBurst` after it
/// began if it never goes quiet. Start-up touches code that never runs again (configuration, the
/// keyring's first reads), and every page of code the kernel maps brings its neighbours with it;
/// `tokend_release_idle_pages` pages those out, and frees the heap's empty pages. Nothing is armed
/// while nothing happens: a daemon at rest is not woken for this.
final class IdleMemory: Sendable {
    /// A burst is over once a tick this long passed with no work: a client asking every few
    /// seconds keeps its pages, and a burst's pages go back within 8 s of its end, not up to 30 s
    /// (issue 47: "RSS just after the load" read 4.8 or 11 MB by where that cycle stood). Longer
    /// than the providers' pooled connections stay open (`HTTPTransport.idleConnectionSeconds`).
    static let quietTick: Double = 4
    /// A daemon never quiet still hands back, this long after the burst began, what the burst
    /// touched once and no longer runs (a sign-in's code under a steady stream of `token` calls).
    static let longestBurst: Double = 30

    private struct Arming {
        let timer: TimerHandle
        /// When the burst began: a burst this old is released even if it goes on.
        let since: Date
    }

    private let clock: any WallClock
    private let timers: any TimerSource
    private let hand: @Sendable () -> Void
    private let logger: Logger
    private let armed = Mutex<Arming?>(nil)
    /// `armed != nil`, readable without the lock: the connection path only loads it.
    private let isArmed = Atomic<Bool>(false)
    /// Work since the last tick; each tick takes it. Sequentially consistent where it and
    /// `isArmed` are written, so work noted as a tick disarms is either seen by it or arms anew.
    private let worked = Atomic<Bool>(false)

    /// `hand`: what giving the pages back does (tests count it instead). Without one, the pager
    /// starts now: its pipe is among the descriptors the daemon holds from the start, not two
    /// that appear at the first release (HostileClientTests counts them).
    init(clock: any WallClock, timers: any TimerSource, logger: Logger, hand: (@Sendable () -> Void)? = nil) {
        self.clock = clock
        self.timers = timers
        self.logger = logger
        if let hand {
            self.hand = hand
        } else {
            if tokend_idle_pager_start() != 0 { logger.warning("no idle pager thread: idle memory is released on the timer's thread") }
            self.hand = { _ = tokend_request_idle_release() }
        }
    }

    /// Work happened (a connection, a line, an event): arm a tick unless one is armed. Two loads
    /// on a busy daemon's every line, a store once per tick.
    func noteWork() {
        if !worked.load(ordering: .relaxed) {
            worked.store(true, ordering: .sequentiallyConsistent)
        }
        guard !isArmed.load(ordering: .sequentiallyConsistent) else { return }
        armed.withLock { armed in
            guard armed == nil else { return }
            // The work that arms is the burst's start, not work the first tick must see again.
            worked.store(false, ordering: .sequentiallyConsistent)
            let now = clock.now()
            armed = Arming(timer: schedule(after: now), since: now)
            isArmed.store(true, ordering: .sequentiallyConsistent)
            logger.debug("idle memory release armed")
        }
    }

    private func schedule(after now: Date) -> TimerHandle {
        timers.schedule(at: now.addingTimeInterval(Self.quietTick)) { [self] in tick() }
    }

    /// A tick: work in it means the burst goes on (another tick), unless it is `longestBurst`
    /// old; a quiet one ends it.
    private func tick() {
        let goesOn = armed.withLock { armed -> Bool in
            guard let arming = armed else { return false }  // released or cancelled meanwhile
            let now = clock.now()
            guard worked.exchange(false, ordering: .sequentiallyConsistent),
                  now.timeIntervalSince(arming.since) < Self.longestBurst else { return false }
            armed = Arming(timer: schedule(after: now), since: arming.since)
            return true
        }
        if !goesOn { release() }
    }

    func release() {
        // Called at the end of start-up while a tick may be armed: this release is that one, so
        // its timer goes (else it fired too, and work noted between armed a second release).
        armed.withLock {
            $0.take()?.timer.cancel()
            isArmed.store(false, ordering: .sequentiallyConsistent)
        }
        hand()
        // Said at debug, as its arming: whether a quiet daemon still has this to do (IdleTests
        // waits until the last of the two said is the release).
        logger.debug("idle memory released")
    }

    func cancel() {
        armed.withLock {
            $0.take()?.timer.cancel()
            isArmed.store(false, ordering: .sequentiallyConsistent)
        }
    }
}
