import Testing
@testable import TokendCore

@Suite struct RefreshPolicyTests {
    let start = Date(timeIntervalSince1970: 1_800_000_000)

    @Test func marginIsFiveMinutesForAnHourToken() {
        #expect(RefreshPolicy().margin(lifetime: 3600) == 300)
    }

    @Test func marginIsAThirdOfAShortLifetime() {
        #expect(RefreshPolicy().margin(lifetime: 6) == 2)
    }

    @Test func jitterMovesTheRefreshEarlierByAtMostTenPercentOfTheMargin() {
        let policy = RefreshPolicy()
        let expiry = start.addingTimeInterval(3600)
        let noJitter = policy.refreshAt(expiresAt: expiry, issuedAt: start, jitterDraw: 0)
        let fullJitter = policy.refreshAt(expiresAt: expiry, issuedAt: start, jitterDraw: 0.999_999)
        #expect(noJitter == expiry.addingTimeInterval(-300))
        #expect(fullJitter < noJitter)
        #expect(noJitter.timeIntervalSince(fullJitter) <= 30)
    }

    @Test func perAccountRefreshBeforeOverridesTheDefault() {
        #expect(RefreshPolicy(refreshBefore: 60).margin(lifetime: 3600) == 60)
    }
}

@Suite struct BackoffTests {
    @Test func firstRetryIsWithinOneSecond() {
        #expect(Backoff().delay(attempt: 0, jitterDraw: 0.999) < 1)
    }

    @Test func windowDoublesThenTheDelayIsCappedAtFiveMinutes() {
        #expect(Backoff().delay(attempt: 3, jitterDraw: 0.5) == 4)
        #expect(Backoff().delay(attempt: 20, jitterDraw: 0.999) == 300)
        #expect(Backoff().delay(attempt: 1_000, jitterDraw: 1) == 300)
    }

    @Test func retryAfterIsHonouredUpToAnHour() {
        #expect(Backoff().delay(attempt: 0, jitterDraw: 0, retryAfter: 120) == 120)
        #expect(Backoff().delay(attempt: 0, jitterDraw: 0, retryAfter: 86_400) == 3600)
    }

    /// The outage arithmetic: at the cap, how many requests an hour with uniformly spread draws.
    @Test func aLongOutageCostsAboutFourteenRequestsAnHourAtTheCap() {
        let draws = 10_000
        let mean = (0..<draws).map { Backoff().delay(attempt: 30, jitterDraw: Double($0) / Double(draws)) }.reduce(0, +) / Double(draws)
        let perHour = 3600 / mean
        #expect(perHour > 12 && perHour < 15)
    }
}
