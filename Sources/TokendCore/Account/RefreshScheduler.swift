/// When each account next needs the engine, and the timers that wake it then.
///
/// The machine says when it wants attention (`nextWake`: a proactive refresh, or the end of a
/// backoff); the scheduler moves a proactive refresh away from seconds other accounts' refreshes
/// already fill (`RefreshSpreading`) and arms one timer per account on the injected timer
/// source. Each account's armed `Wake` lives in the account (`AccountState.wake`); the
/// scheduler keeps only what spans accounts. It never starts a refresh itself: a timer only
/// calls back into the engine, which asks the wall clock again.
///
/// There is no periodic recheck: each timer is armed on the wall clock and on the monotonic one
/// (`SystemTimerSource`), so a suspend or a wall clock set forward fires it at once, and one set
/// back cannot hold it late. An idle daemon sleeps until its next timer.
public struct RefreshScheduler {
    /// An account's armed wake-up.
    struct Wake: Sendable {
        var deadline: Date
        /// A proactive refresh (spread among the others), not the end of a backoff.
        var proactive: Bool
        var timer: TimerHandle
    }

    public let timers: any TimerSource
    /// The armed proactive refreshes per second (`RefreshSpreading.second(of:)`), kept as wakes
    /// are armed and disarmed: placing one refresh then costs a few look-ups, not a pass over
    /// every account's wake (which dominated the daemon's CPU at 10,000 accounts).
    private var proactivePerSecond: [Double: Int] = [:]
    private var proactiveCount = 0

    public init(timers: any TimerSource) {
        self.timers = timers
    }

    /// The instant to wake an account at, given the other accounts' armed proactive refreshes
    /// (its own armed `current` one does not count against it); nil when the machine wants
    /// nothing (refreshing, needs a login, waiting for the keyring). `scopedDue`: when a narrowed
    /// token's proactive refresh is due; it counts only while the account is idle, as a grant
    /// takes the account's refresh slot.
    func nextWake(_ current: Wake?, machine: AccountMachine, scopedDue: Date?, now: Date) -> (deadline: Date, proactive: Bool)? {
        let session = sessionWake(current, machine: machine, now: now)
        guard let scopedDue, machine.phase == .idle else { return session }
        guard let session, session.deadline <= scopedDue else { return (max(scopedDue, now), false) }
        return session
    }

    private func sessionWake(_ current: Wake?, machine: AccountMachine, now: Date) -> (deadline: Date, proactive: Bool)? {
        guard let wake = machine.nextWake else { return nil }
        guard wake > now, let window = machine.proactiveWindow else { return (wake, false) }
        let own = current.flatMap { $0.proactive ? RefreshSpreading.second(of: $0.deadline) : nil }
        let slot = RefreshSpreading.slot(
            desired: wake, earliest: max(now, window.earliest), takenCount: proactiveCount - (own == nil ? 0 : 1)
        ) { second in
            proactivePerSecond[second, default: 0] - (second == own ? 1 : 0)
        }
        return (slot, true)
    }

    /// Arms an account's timer for its next wake-up, replacing its armed one in `wake`; `fire`
    /// runs then. Returns the deadline armed.
    /// `notBefore`: the end of the latest promise on the held token, which a session refresh
    /// waits for (docs/architecture.md, "Promises").
    @discardableResult
    mutating func arm(_ wake: inout Wake?, machine: AccountMachine, scopedDue: Date?, notBefore: Date? = nil, now: Date, fire: @escaping @Sendable () -> Void) -> Date? {
        disarm(&wake)
        guard let (due, proactive) = nextWake(nil, machine: machine, scopedDue: scopedDue, now: now) else { return nil }
        let deadline = max(due, notBefore ?? due)
        wake = Wake(deadline: deadline, proactive: proactive, timer: timers.schedule(at: deadline, fire))
        if proactive {
            proactivePerSecond[RefreshSpreading.second(of: deadline), default: 0] += 1
            proactiveCount += 1
        }
        return deadline
    }

    /// No timer armed in `wake`, and its claimed refresh second is free for others.
    mutating func disarm(_ armed: inout Wake?) {
        guard let wake = armed.take() else { return }
        wake.timer.cancel()
        guard wake.proactive else { return }
        let second = RefreshSpreading.second(of: wake.deadline)
        proactivePerSecond[second, default: 0] -= 1
        if proactivePerSecond[second] == 0 { proactivePerSecond[second] = nil }
        proactiveCount -= 1
    }

    /// Whether a timer that fired at `now` should start the account's refresh: the machine's own
    /// instant has come, or the earlier one spreading moved it to (`wake`).
    static func isDue(_ wake: Wake?, machine: AccountMachine, at now: Date) -> Bool {
        if machine.isRefreshDue(at: now) { return true }
        guard let wake, wake.proactive else { return false }
        return wake.deadline <= now
    }
}

extension AccountState {
    /// Arms the account's timer for its next wake-up, placed by `scheduler` among the other
    /// accounts' (its armed one replaced); `notBefore`: the end of the latest promise on the held
    /// token, which a session refresh waits for (docs/architecture.md, "Promises").
    public mutating func arm(on scheduler: inout RefreshScheduler, notBefore: Date?, now: Date, fire: @escaping @Sendable () -> Void) {
        let scopedDue = scopedTokens.nextDue(after: now, generation: machine.generation, policy: machine.policy)
        scheduler.arm(&wake, machine: machine, scopedDue: scopedDue, notBefore: notBefore, now: now, fire: fire)
    }

    /// No timer armed for the account.
    public mutating func disarm(on scheduler: inout RefreshScheduler) {
        scheduler.disarm(&wake)
    }

    /// The instant the account's timer is armed for; nil when none is.
    public var armedDeadline: Date? { wake?.deadline }

    /// Whether a timer that fired at `now` should start the account's refresh (`RefreshScheduler.isDue`).
    public func isRefreshDue(at now: Date) -> Bool {
        RefreshScheduler.isDue(wake, machine: machine, at: now)
    }
}
