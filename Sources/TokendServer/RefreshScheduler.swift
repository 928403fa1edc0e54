import TokendCore

/// When each account next needs the engine, and the timers that wake it then.
///
/// The machine says when it wants attention (`nextWake`: a proactive refresh, or the end of a
/// backoff); the scheduler moves a proactive refresh away from seconds other accounts' refreshes
/// already fill (`RefreshSpreading`) and arms one timer per account on the injected timer
/// source. It never starts a refresh itself: a timer only calls back into the engine, which asks
/// the wall clock again.
struct RefreshScheduler {
    /// How often every account is re-checked against the wall clock, whatever its timer says:
    /// bounds how late a refresh can be after a clock jump or a suspend a timer slept through.
    static let recheckInterval: Double = 10

    /// An account's armed wake-up.
    struct Wake {
        var deadline: Date
        /// A proactive refresh (spread among the others), not the end of a backoff.
        var proactive: Bool
        var timer: TimerHandle
    }

    let timers: any TimerSource
    private(set) var wakes: [String: Wake] = [:]
    private var recheck: TimerHandle?

    init(timers: any TimerSource) {
        self.timers = timers
    }

    /// The instant to wake `name` at, given the other accounts' armed proactive refreshes; nil
    /// when the machine wants nothing (refreshing, needs a login, waiting for the keyring).
    func nextWake(_ name: String, machine: AccountMachine, now: Date) -> (deadline: Date, proactive: Bool)? {
        guard let wake = machine.nextWake else { return nil }
        guard wake > now, let window = machine.proactiveWindow else { return (wake, false) }
        let taken = wakes.compactMap { $0.key != name && $0.value.proactive ? $0.value.deadline : nil }
        return (RefreshSpreading.slot(desired: wake, earliest: max(now, window.earliest), taken: taken), true)
    }

    /// Arms `name`'s timer for its next wake-up (replacing any armed one); `fire` runs then.
    /// Returns the deadline armed.
    @discardableResult
    mutating func arm(_ name: String, machine: AccountMachine, now: Date, fire: @escaping @Sendable () -> Void) -> Date? {
        disarm(name)
        guard let (deadline, proactive) = nextWake(name, machine: machine, now: now) else { return nil }
        wakes[name] = Wake(deadline: deadline, proactive: proactive, timer: timers.schedule(at: deadline, fire))
        return deadline
    }

    /// No timer for `name`, and its claimed refresh second is free for others.
    mutating func disarm(_ name: String) {
        wakes.removeValue(forKey: name)?.timer.cancel()
    }

    /// Whether a timer that fired at `now` should start `name`'s refresh: the machine's own
    /// instant has come, or the earlier one spreading moved it to.
    func isDue(_ name: String, machine: AccountMachine, at now: Date) -> Bool {
        if machine.isRefreshDue(at: now) { return true }
        guard let wake = wakes[name], wake.proactive else { return false }
        return wake.deadline <= now
    }

    /// Arms the next recheck, `recheckInterval` from `now`, unless one is armed.
    mutating func armRecheck(now: Date, fire: @escaping @Sendable () -> Void) {
        guard recheck == nil else { return }
        recheck = timers.schedule(at: now.addingTimeInterval(Self.recheckInterval), fire)
    }

    /// The recheck fired: the next one may be armed.
    mutating func recheckFired() {
        recheck = nil
    }

    /// Cancels every timer (shutdown).
    mutating func disarmAll() {
        recheck?.cancel()
        recheck = nil
        for name in wakes.keys { disarm(name) }
    }
}
