import Testing
@testable import TokendCore

/// `TokenSet.anchored` / `restored`: a stored session's times after a restart, when the wall
/// clock that wrote them was ahead and has been set back since (found by scripts/chaos).
@Suite struct BootAnchorTests {
    static let issued = Date(timeIntervalSince1970: 1_800_000_000)
    /// A token set issued at `issued` by the daemon's clock, living 60 s.
    static let session = TokenSet(
        refreshToken: "r", idToken: "i", idTokenExpiresAt: issued.addingTimeInterval(60), issuedAt: issued)

    /// Written 10 s after issue by a clock an hour ahead; read back 30 s later (boot clock) by a
    /// restarted daemon whose clock was set right: the token has 20 s left, not an hour and 20 s.
    @Test func aClockSetBackBeforeARestartDoesNotMakeATokenYounger() throws {
        let written = Self.session.anchored(now: Self.issued.addingTimeInterval(10), boot: BootReading(id: "b1", seconds: 1_000))
        let stored = try TokenSet(keyringJSON: written.keyringJSON())
        #expect(stored.boot == BootAnchor(id: "b1", issuedAt: 990))
        let now = Self.issued.addingTimeInterval(-3600 + 40)
        let restored = stored.restored(now: now, boot: BootReading(id: "b1", seconds: 1_030))
        let expiry = try #require(restored.idTokenExpiresAt)
        #expect(abs(expiry.timeIntervalSince(now) - 20) < 0.001)
        #expect(abs(try #require(restored.issuedAt).timeIntervalSince(now) + 40) < 0.001)
        #expect(restored.boot == nil, "anchors stay in the keyring; in memory times are the daemon's")
    }

    /// A clock that was right, or behind (a forward step since): the stored times stand, never
    /// moved later.
    @Test func storedTimesAreNeverMovedLater() throws {
        let written = Self.session.anchored(now: Self.issued, boot: BootReading(id: "b1", seconds: 1_000))
        for now in [Self.issued.addingTimeInterval(5), Self.issued.addingTimeInterval(7200)] {
            let restored = written.restored(now: now, boot: BootReading(id: "b1", seconds: 1_005))
            #expect(restored.idTokenExpiresAt == Self.session.idTokenExpiresAt)
            #expect(restored.issuedAt == Self.session.issuedAt)
        }
    }

    /// Another boot: the boot clock says nothing. Issued "in the future" by our clock means the
    /// writer's clock was ahead by an unknown amount: expired, so the first use refreshes.
    @Test func anotherBootWithAnIssueTimeAheadOfUsCountsAsExpired() throws {
        let written = Self.session.anchored(now: Self.issued, boot: BootReading(id: "b1", seconds: 1_000))
        let now = Self.issued.addingTimeInterval(-600)
        let restored = written.restored(now: now, boot: BootReading(id: "b2", seconds: 50))
        #expect(try #require(restored.idTokenExpiresAt) <= now)
        let unanchored = Self.session.restored(now: now, boot: BootReading(id: "b2", seconds: 50))
        #expect(try #require(unanchored.idTokenExpiresAt) <= now)
    }

    /// Another boot, issued in our past: nothing better is known than the stored times.
    @Test func anotherBootWithAnIssueTimeBehindUsKeepsTheStoredTimes() {
        let written = Self.session.anchored(now: Self.issued, boot: BootReading(id: "b1", seconds: 1_000))
        let restored = written.restored(now: Self.issued.addingTimeInterval(30), boot: BootReading(id: "b2", seconds: 50))
        #expect(restored.idTokenExpiresAt == Self.session.idTokenExpiresAt)
    }

    /// No readable boot id: no anchor ever matches, the cautious path decides.
    @Test func anEmptyBootIDNeverMatches() throws {
        let written = Self.session.anchored(now: Self.issued, boot: BootReading(id: "", seconds: 1_000))
        let now = Self.issued.addingTimeInterval(-600)
        let restored = written.restored(now: now, boot: BootReading(id: "", seconds: 1_000))
        #expect(try #require(restored.idTokenExpiresAt) <= now)
    }
}
