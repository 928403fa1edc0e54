import CTokendShims
import Glibc
import Synchronization
import TokendCore

/// The daemon's timer source: every timer armed twice, on a wall-clock and on a monotonic
/// deadline, firing once at whichever comes first (docs/architecture.md, "Time").
///
/// The delay is taken from the injected clock when the timer is armed. The wall deadline makes a
/// suspend (or a wall clock set forward) fire it at once; the monotonic one keeps a wall clock set
/// back from holding every timer back by the step (the chaos run found the keyring poll two hours
/// late). Whoever a timer wakes asks the clock again, and sleeps on if it woke early.
public struct SystemTimerSource: TimerSource {
    let clock: any WallClock
    let thread: TimerThread

    public init(clock: any WallClock, thread: TimerThread = .shared) {
        self.clock = clock
        self.thread = thread
    }

    public func schedule(at deadline: Date, _ fire: @escaping @Sendable () -> Void) -> TimerHandle {
        thread.schedule(after: deadline.timeIntervalSince(clock.now()), fire)
    }
}

/// One thread that fires the process's timers, from two kernel timers (timerfd) that are armed
/// only for the earliest deadline on each clock: an idle daemon is woken by its next timer and
/// nothing else. Not libdispatch: once any Dispatch worker thread has run, libdispatch wakes its
/// manager thread every second for the life of the process (its workqueue monitor,
/// src/event/workqueue.c), 60 context switches a minute of an otherwise idle daemon.
public final class TimerThread: Sendable {
    /// The process's one timer thread, started on first use.
    public static let shared = TimerThread()

    /// A delay is bounded before it becomes nanoseconds: ten years is "never" for a timer, and
    /// Date.distantFuture in nanoseconds does not fit an Int64.
    static let longestDelay: Double = 10 * 365 * 86_400

    private struct State {
        var fires: [UInt64: @Sendable () -> Void] = [:]
        var byWall = DeadlineHeap()
        var byMonotonic = DeadlineHeap()
        var nextID: UInt64 = 0
        /// What each kernel timer is armed for now (nil: disarmed).
        var armedWall: Int64?
        var armedMonotonic: Int64?
    }

    private let state = Mutex(State())
    private let wallTimer: Int32
    private let monotonicTimer: Int32
    private let poller: Int32

    /// Starts the thread (it holds the instance for the life of the process). A process that cannot create two timerfds and an epoll instance has run
    /// out of descriptors before its first timer: nothing else it could do would work either.
    public init() {
        wallTimer = timerfd_create(CLOCK_REALTIME, Int32(TFD_NONBLOCK | TFD_CLOEXEC))  // conversion: C flag constants
        monotonicTimer = timerfd_create(CLOCK_MONOTONIC, Int32(TFD_NONBLOCK | TFD_CLOEXEC))  // conversion: C flag constants
        poller = epoll_create1(Int32(EPOLL_CLOEXEC))  // conversion: a C flag constant
        precondition(wallTimer >= 0 && monotonicTimer >= 0 && poller >= 0, "cannot create the timer thread's descriptors (errno \(errno))")
        for timer in [wallTimer, monotonicTimer] {
            var event = epoll_event()
            event.events = EPOLLIN.rawValue
            event.data.fd = timer
            epoll_ctl(poller, EPOLL_CTL_ADD, timer, &event)
        }
        DedicatedThread.start("tokend-timers") { [self] in run() }
    }

    /// Calls `fire` on the timer thread once `delay` seconds have passed on either clock.
    public func schedule(after delay: Double, _ fire: @escaping @Sendable () -> Void) -> TimerHandle {
        let nanoseconds = Int64(max(0, min(delay.isNaN ? 0 : delay, Self.longestDelay)) * 1_000_000_000)  // conversion: bounded above
        let wall = clockNanoseconds(CLOCK_REALTIME) + nanoseconds
        let monotonic = clockNanoseconds(CLOCK_MONOTONIC) + nanoseconds
        let id = state.withLock { state in
            let id = state.nextID
            state.nextID += 1
            state.fires[id] = fire
            state.byWall.push(wall, id)
            state.byMonotonic.push(monotonic, id)
            rearm(&state)
            return id
        }
        return TimerHandle { [self] in
            state.withLock { state in
                guard state.fires.removeValue(forKey: id) != nil else { return }
                rearm(&state)
            }
        }
    }

    private func run() {
        var events = [epoll_event](repeating: epoll_event(), count: 2)
        while true {
            let count = epoll_wait(poller, &events, 2, -1)
            if count < 0 { continue }  // EINTR
            // Read to clear each readable timer; a wall timer answers ECANCELED after the clock
            // was set, which changes nothing here: every deadline is compared with the clocks anew.
            var expirations: UInt64 = 0
            _ = read(wallTimer, &expirations, 8)
            _ = read(monotonicTimer, &expirations, 8)
            let wall = clockNanoseconds(CLOCK_REALTIME)
            let monotonic = clockNanoseconds(CLOCK_MONOTONIC)
            let due = state.withLock { state in
                var due: [@Sendable () -> Void] = []
                while let top = state.byWall.top, top.deadline <= wall {
                    state.byWall.pop()
                    if let fire = state.fires.removeValue(forKey: top.id) { due.append(fire) }
                }
                while let top = state.byMonotonic.top, top.deadline <= monotonic {
                    state.byMonotonic.pop()
                    if let fire = state.fires.removeValue(forKey: top.id) { due.append(fire) }
                }
                // A timer that fired is disarmed; one the clock step cancelled must be set again.
                state.armedWall = nil
                state.armedMonotonic = nil
                rearm(&state)
                return due
            }
            for fire in due { fire() }
        }
    }

    /// Drops fired and cancelled timers from the top of each heap (and from everywhere once they
    /// outnumber the live ones), then arms each kernel timer for its clock's earliest deadline.
    private func rearm(_ state: inout State) {
        let fires = state.fires
        if state.byWall.count > 2 * fires.count + 64 {
            state.byWall.keep { fires[$0] != nil }
            state.byMonotonic.keep { fires[$0] != nil }
        }
        while let top = state.byWall.top, fires[top.id] == nil { state.byWall.pop() }
        while let top = state.byMonotonic.top, fires[top.id] == nil { state.byMonotonic.pop() }
        let wall = state.byWall.top?.deadline
        if wall != state.armedWall {
            Self.arm(wallTimer, at: wall, flags: Int32(TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET))  // conversion: C flag constants
            state.armedWall = wall
        }
        let monotonic = state.byMonotonic.top?.deadline
        if monotonic != state.armedMonotonic {
            Self.arm(monotonicTimer, at: monotonic, flags: Int32(TFD_TIMER_ABSTIME))  // conversion: a C flag constant
            state.armedMonotonic = monotonic
        }
    }

    /// Absolute deadlines: a relative one would be measured from a "now" read a moment later,
    /// and libfaketime's clock tests re-arm only absolute wall-clock timers after a step.
    private static func arm(_ timer: Int32, at deadline: Int64?, flags: Int32) {
        var value = itimerspec()
        if let deadline {
            // Zero would disarm: a deadline already in the past still fires, at once.
            let due = max(deadline, 1)
            value.it_value = timespec(tv_sec: Int(due / 1_000_000_000), tv_nsec: Int(due % 1_000_000_000))  // conversion: Int64 to Int on 64-bit Linux
        }
        timerfd_settime(timer, flags, &value, nil)
    }
}

/// A binary min-heap of deadlines (nanoseconds on one clock) with the timer each belongs to.
struct DeadlineHeap {
    private var entries: [(deadline: Int64, id: UInt64)] = []

    var count: Int { entries.count }
    var top: (deadline: Int64, id: UInt64)? { entries.first }

    mutating func push(_ deadline: Int64, _ id: UInt64) {
        entries.append((deadline, id))
        siftUp(entries.count - 1)
    }

    mutating func pop() {
        guard !entries.isEmpty else { return }
        entries.swapAt(0, entries.count - 1)
        entries.removeLast()
        siftDown(0)
    }

    /// Keeps only the entries of the timers `live` says are, re-ordered from scratch.
    mutating func keep(_ live: (UInt64) -> Bool) {
        entries.removeAll { !live($0.id) }
        for index in stride(from: entries.count / 2 - 1, through: 0, by: -1) { siftDown(index) }
    }

    private mutating func siftUp(_ start: Int) {
        var child = start
        while child > 0 {
            let parent = (child - 1) / 2
            guard entries[child].deadline < entries[parent].deadline else { return }
            entries.swapAt(child, parent)
            child = parent
        }
    }

    private mutating func siftDown(_ start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            guard left < entries.count else { return }
            let right = left + 1
            let smaller = right < entries.count && entries[right].deadline < entries[left].deadline ? right : left
            guard entries[smaller].deadline < entries[parent].deadline else { return }
            entries.swapAt(smaller, parent)
            parent = smaller
        }
    }
}
