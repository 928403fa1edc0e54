import Testing
@testable import TokendCore

/// Faults of time and long outages, on a manual clock: instants are handed to the machine, so
/// two simulated hours take microseconds.
@Suite struct TimeAndOutageTests {
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    func session(at now: Date, lifetime: Double = 3600) -> TokenSet {
        TokenSet(refreshToken: "rt", idToken: "id", idTokenExpiresAt: now.addingTimeInterval(lifetime), accessToken: "id",
            accessTokenExpiresAt: now.addingTimeInterval(lifetime), issuedAt: now)
    }

    /// A 2-hour outage: every attempt fails transiently. Counts the requests the machine would
    /// send, with real random draws. At the cap it must stay near ~15 an hour.
    @Test(arguments: 0..<20)
    func aTwoHourOutageCostsAboutFifteenRequestsAnHour(seed: Int) {
        var generator = SplitMix(seed: UInt64(seed))
        var machine = AccountMachine(tokens: session(at: t0))
        var now = t0.addingTimeInterval(3300)
        let outageEnd = now.addingTimeInterval(7200)
        var attempts: [Date] = []
        while now < outageEnd {
            guard let ticket = machine.startRefresh(at: now) else { Issue.record("refresh not startable at \(now)"); return }
            attempts.append(now)
            let completion = machine.finish(ticket, .transient(RefreshFailure(code: "http_503", message: "HTTP 503"), retryAfter: nil), at: now, jitterDraw: generator.unit())
            guard case .willRetry(_, let retryAt) = completion else { Issue.record("expected a retry"); return }
            #expect(retryAt.timeIntervalSince(now) <= Backoff.cap)
            now = retryAt
        }
        #expect(machine.tokens?.refreshToken == "rt", "two hours of failures never touch the refresh token")
        let secondHour = attempts.filter { $0 >= outageEnd.addingTimeInterval(-3600) }.count
        #expect(secondHour <= 20, "at the cap: \(secondHour) requests in an hour")
        #expect(attempts.count <= 45, "\(attempts.count) requests in two hours")
    }

    @Test func aClockJumpForwardNeverServesTheDeadToken() {
        let machine = AccountMachine(tokens: session(at: t0))
        let afterJump = t0.addingTimeInterval(2 * 3600)
        #expect(machine.answer(.id, minValid: 0, at: afterJump) == .refresh)
        #expect(machine.isRefreshDue(at: afterJump), "a timer woken after the jump refreshes at once")
        #expect(machine.stateName(at: afterJump) == "stale")
    }

    @Test func aClockJumpBackDoesNotRefreshEarlyNorServeBeyondExpiry() {
        let machine = AccountMachine(tokens: session(at: t0))
        let beforeJump = t0.addingTimeInterval(-3600)
        #expect(!machine.isRefreshDue(at: beforeJump))
        // The token's expiry is absolute: moving the clock back makes it look longer-lived, but
        // min_valid is still measured against its real `exp`.
        #expect(machine.answer(.id, minValid: 60, at: beforeJump) == .token("id", expiresAt: t0.addingTimeInterval(3600)))
    }

    @Test func suspendThroughABackoffRetriesAtOnceOnResume() {
        var machine = AccountMachine(tokens: session(at: t0, lifetime: 60))
        let ticket = machine.startRefresh(at: t0)!
        _ = machine.finish(ticket, .transient(RefreshFailure(code: "network", message: "down"), retryAfter: 30), at: t0, jitterDraw: 0)
        let resumed = t0.addingTimeInterval(8 * 3600)
        #expect(machine.isRefreshDue(at: resumed))
        #expect(machine.answer(.id, minValid: 0, at: resumed) == .retryAt(t0.addingTimeInterval(30)))
        #expect(machine.startRefresh(at: resumed) != nil)
    }
}

/// A small deterministic generator (SplitMix64), so a failing seed can be replayed.
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed &+ 0x9E37_79B9_7F4A_7C15 }
    mutating func next() -> UInt64 {
        state = state &+ 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    mutating func unit() -> Double { Double(next() >> 11) / Double(1 << 53) }
}
