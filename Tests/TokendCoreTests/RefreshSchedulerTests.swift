import Synchronization
import Testing
@testable import TokendCore
import TokendTestClock

/// The scheduler alone: which instant it arms for a machine, and that its timers fire only when
/// the manual clock passes them.
@Suite struct RefreshSchedulerTests {
    let clock = ManualClock()
    var t0: Date { clock.now() }

    func machine(expiresIn lifetime: Double = 3600, refreshBefore: Double = 300) -> AccountMachine {
        AccountMachine(
            policy: RefreshPolicy(refreshBefore: refreshBefore),
            tokens: TokenSet(refreshToken: "rt", idToken: "id", idTokenExpiresAt: t0.addingTimeInterval(lifetime), issuedAt: t0))
    }

    @Test func armsAtTheMachinesInstantAndFiresOnlyWhenTheClockGetsThere() {
        var scheduler = RefreshScheduler(timers: clock)
        var wake: RefreshScheduler.Wake?
        let fired = Atomic<Int>(0)
        let deadline = scheduler.arm(&wake, machine: machine(), scopedDue: nil, now: t0) { fired.add(1, ordering: .relaxed) }
        #expect(deadline == t0.addingTimeInterval(3300))
        clock.advance(by: 3299.9)
        #expect(fired.load(ordering: .relaxed) == 0)
        clock.advance(by: 0.1)
        #expect(fired.load(ordering: .relaxed) == 1)
    }

    /// A short token's margin is a third of its life, not the configured 300 s.
    @Test func aShortTokensMarginIsAThirdOfItsLife() {
        var scheduler = RefreshScheduler(timers: clock)
        var wake: RefreshScheduler.Wake?
        #expect(scheduler.arm(&wake, machine: machine(expiresIn: 30), scopedDue: nil, now: t0) {} == t0.addingTimeInterval(20))
    }

    @Test func disarmCancelsTheTimer() {
        var scheduler = RefreshScheduler(timers: clock)
        var wake: RefreshScheduler.Wake?
        let fired = Atomic<Int>(0)
        scheduler.arm(&wake, machine: machine(), scopedDue: nil, now: t0) { fired.add(1, ordering: .relaxed) }
        scheduler.disarm(&wake)
        #expect(clock.advance(by: 7200) == 0)
        #expect(fired.load(ordering: .relaxed) == 0)
        #expect(wake == nil)
    }

    /// Spreading moves a full second's extra refreshes earlier, and a timer that fires at the
    /// moved instant counts as due although the machine's own instant is later.
    @Test func aSpreadRefreshIsDueAtItsMovedInstant() {
        var scheduler = RefreshScheduler(timers: clock)
        let same = machine()
        var full = [RefreshScheduler.Wake?](repeating: nil, count: RefreshSpreading.perSecond)
        for index in full.indices { scheduler.arm(&full[index], machine: same, scopedDue: nil, now: t0) {} }
        var late: RefreshScheduler.Wake?
        let moved = scheduler.arm(&late, machine: same, scopedDue: nil, now: t0) {}
        #expect(moved == t0.addingTimeInterval(3299))
        #expect(RefreshScheduler.isDue(late, machine: same, at: t0.addingTimeInterval(3299)))
        #expect(!RefreshScheduler.isDue(full[0], machine: same, at: t0.addingTimeInterval(3299)))
    }

    /// A backoff's end is armed as it is: it is not a proactive refresh, so it is never moved.
    @Test func aBackoffIsArmedUnmoved() {
        let scheduler = RefreshScheduler(timers: clock)
        var backingOff = machine()
        let ticket = backingOff.startRefresh(at: t0)!
        _ = backingOff.finish(ticket, .transient(RefreshFailure(code: "x", message: "x"), retryAfter: 60), at: t0, jitterDraw: 0)
        let wake = scheduler.nextWake(nil, machine: backingOff, scopedDue: nil, now: t0)
        #expect(wake?.deadline == t0.addingTimeInterval(60))
        #expect(wake?.proactive == false)
    }

    /// Nothing is armed while a refresh is in flight: its outcome arms the next wake-up.
    @Test func nothingIsArmedWhileRefreshing() {
        var scheduler = RefreshScheduler(timers: clock)
        var wake: RefreshScheduler.Wake?
        var refreshing = machine()
        _ = refreshing.startRefresh(at: t0)
        #expect(scheduler.arm(&wake, machine: refreshing, scopedDue: nil, now: t0) {} == nil)
        #expect(clock.armedDeadlines.isEmpty)
    }

    /// A narrowed token due before the session's refresh is the account's wake-up, while the
    /// account is idle; during a backoff only the backoff's end counts (a grant takes the slot).
    @Test func aNarrowedTokensRefreshWakesTheAccountWhileItIsIdle() {
        let scheduler = RefreshScheduler(timers: clock)
        let scoped = t0.addingTimeInterval(600)
        let wake = scheduler.nextWake(nil, machine: machine(), scopedDue: scoped, now: t0)
        #expect(wake?.deadline == scoped && wake?.proactive == false)
        let later = scheduler.nextWake(nil, machine: machine(), scopedDue: t0.addingTimeInterval(7200), now: t0)
        #expect(later?.deadline == t0.addingTimeInterval(3300), "the session's own refresh comes first")
        #expect(scheduler.nextWake(nil, machine: machine(), scopedDue: t0.addingTimeInterval(-5), now: t0)?.deadline == t0, "an overdue one wakes it now")
        var backingOff = machine()
        let ticket = backingOff.startRefresh(at: t0)!
        _ = backingOff.finish(ticket, .transient(RefreshFailure(code: "x", message: "x"), retryAfter: 60), at: t0, jitterDraw: 0)
        #expect(scheduler.nextWake(nil, machine: backingOff, scopedDue: t0.addingTimeInterval(1), now: t0)?.deadline == t0.addingTimeInterval(60))
    }
}
