import CTokendShims
import Logging
import Synchronization
import TokendCore

/// Hands back what an idle daemon holds for nothing (docs/architecture.md, "Memory at idle"):
/// once start-up is done, and `quietPeriod` after the first work since the last release (a busy
/// daemon releases that often, which costs it a few page faults; an idle one once). Start-up
/// touches code that never runs again (configuration, the keyring's first reads), and every page
/// of code the kernel maps brings its neighbours with it; `tokend_release_idle_pages` pages
/// those out, and frees the heap's empty pages. Nothing is armed while nothing happens: a daemon
/// at rest is not woken for this.
final class IdleMemory: Sendable {
    /// Long enough that a client asking every few seconds keeps its pages, short enough that a
    /// daemon left alone after a burst soon holds only what it needs.
    static let quietPeriod: Double = 30

    private let clock: any WallClock
    private let timers: any TimerSource
    private let hand: @Sendable () -> Void
    private let logger: Logger
    private let armed = Mutex<TimerHandle?>(nil)
    /// `armed != nil`, readable without the lock: the connection path only loads it.
    private let isArmed = Atomic<Bool>(false)

    /// `hand`: what giving the pages back does (tests count it instead).
    init(clock: any WallClock, timers: any TimerSource, logger: Logger, hand: @escaping @Sendable () -> Void = { _ = tokend_release_idle_pages() }) {
        self.clock = clock
        self.timers = timers
        self.logger = logger
        self.hand = hand
    }

    /// Work happened (a connection, an event): release `quietPeriod` from now unless a release is
    /// armed already. Cheap then, which is every call of a busy daemon but the first.
    func noteWork() {
        guard !isArmed.load(ordering: .relaxed) else { return }
        armed.withLock { armed in
            guard armed == nil else { return }
            isArmed.store(true, ordering: .relaxed)
            armed = timers.schedule(at: clock.now().addingTimeInterval(Self.quietPeriod)) { [self] in release() }
            logger.debug("idle memory release armed")
        }
    }

    func release() {
        // Called at the end of start-up while a release may be armed: this one is that one, so
        // its timer goes (else it fired too, and work noted between armed a second release).
        armed.withLock {
            $0.take()?.cancel()
            isArmed.store(false, ordering: .relaxed)
        }
        hand()
        // Said at debug, as its arming: whether a quiet daemon still has this to do (IdleTests
        // waits until the last of the two said is the release).
        logger.debug("idle memory released")
    }

    func cancel() {
        armed.withLock {
            $0.take()?.cancel()
            isArmed.store(false, ordering: .relaxed)
        }
    }
}
