import Foundation
import Testing
import TokendCore
import TokendProtocol
import TokendFakes
import TokendTestSupport

/// Issue 3, item 6, end to end: tokend under libfaketime (Debian's `faketime`), its clock moved
/// at run time through FAKETIME_TIMESTAMP_FILE while the provider and the test keep real time.
@Suite struct ClockTests {
    static let library = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1"
    /// Loaded first, so monotonic timers stay where a real wall-clock step leaves them
    /// (libfaketime shifts them by its offset: Sources/CTokendFaketimeFix).
    static let fix = DaemonHarness.binDirectory + "/libTokendFaketimeFix.so"

    func fakedEnvironment(offsetFile: String, monotonicToo: Bool, offset: String = "+0") throws -> [String: String] {
        try offset.write(toFile: offsetFile, atomically: true, encoding: .utf8)
        var environment = [
            "LD_PRELOAD": Self.fix + " " + Self.library,
            "FAKETIME_TIMESTAMP_FILE": offsetFile,
            // Re-read the file on every call, so the test can move the clock while tokend runs.
            "FAKETIME_NO_CACHE": "1",
        ]
        environment["FAKETIME_DONT_FAKE_MONOTONIC"] = monotonicToo ? "0" : "1"
        return environment
    }

    /// The wall clock jumps forward two hours, back one, and back to true while a client keeps
    /// asking: every token served is alive by real time, and refreshing goes on as scheduled.
    @Test func wallClockJumpsNeverServeADeadToken() async throws {
        var options = FakeFirebase.Options()
        options.lifetime = 6
        try await withWorld(options: options, startDaemon: false) { world in
            let offsetFile = world.keyring.root.appendingPathComponent("faketime").path
            try await world.startDaemon(extraEnvironment: try fakedEnvironment(offsetFile: offsetFile, monotonicToo: false))
            try await world.importNewUser()
            for offset in ["+2h", "-1h", "+0", "+7d", "+0"] {
                try offset.write(toFile: offsetFile, atomically: true, encoding: .utf8)
                let end = Date().addingTimeInterval(4)
                // Four seconds of asking, and at least three answers however slow the machine.
                var served = 0
                while Date() < end || served < 3 {
                    let asked = Date()
                    let run = try await world.tokenctl(["token", "work", "--min-valid", "1"])
                    #expect(run.status == 0, "offset \(offset): \(run.stderr)")
                    let expiry = JWTClaims(token: run.stdout.trimmingCharacters(in: .newlines))?.expiresAt
                    #expect(expiry != nil, "offset \(offset): no token served")
                    guard let expiry else { break }
                    #expect(expiry.timeIntervalSince(asked) >= 0.99, "offset \(offset): served a token dying in \(expiry.timeIntervalSince(asked)) s")
                    served += 1
                    try await Task.sleep(for: .milliseconds(200))  // client pacing
                }
            }
            #expect(world.fake.requests.filter { $0.status == 200 }.count >= 4, "refreshing went on through the jumps")
        }
    }

    /// Every clock jumps 700 s at once — what a suspend looks like to the daemon. Its 10-minute
    /// token is dead by its clock: without any client asking, it refreshes at once. Its own
    /// refresh was 400 s of real time away, beyond any poll here: only a timer the jump fired
    /// can have started it.
    @Test func aSuspendThatSleptThroughTheExpiryRefreshesAtOnce() async throws {
        var options = FakeFirebase.Options()
        options.lifetime = 600
        try await withWorld(options: options, startDaemon: false) { world in
            let offsetFile = world.keyring.root.appendingPathComponent("faketime").path
            try await world.startDaemon(extraEnvironment: try fakedEnvironment(offsetFile: offsetFile, monotonicToo: true))
            try await world.importNewUser()
            let before = world.fake.requests.count
            let status = try await world.status()
            #expect(status.state == "active")
            try "+700s".write(toFile: offsetFile, atomically: true, encoding: .utf8)
            // No periodic recheck: the account's timer, armed on the wall clock too, fires at the
            // step (Sources/CTokendFaketimeFix re-arms wall-clock timers as a real step moves them).
            try await poll("a refresh right after the jump") { world.fake.requests.count > before }
            let run = try await world.tokenctl(["token", "work", "--min-valid", "1"])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.stdout.trimmingCharacters(in: .newlines) == world.fake.requests.last?.issuedIDToken, "the token minted after the jump, not the old one")
        }
    }

    /// Issue 8, item 1: tokend starts with its wall clock an hour behind (before NTP set it, or a
    /// VM guest not yet corrected after a pause) and restores a session; then the wall clock is
    /// set right while boot time does not jump. The stored token died meanwhile by the provider's
    /// clock: it must not be served, a fresh one must.
    @Test func aWallClockSetForwardIsFollowedAtOnce() async throws {
        var options = FakeFirebase.Options()
        options.lifetime = 6
        try await withWorld(options: options) { world in
            try await world.importNewUser()
            let stored = try #require(try await world.storedSession()?.idToken)
            let storedExpiry = try #require(JWTClaims(token: stored)?.expiresAt)
            world.stopDaemon()
            let offsetFile = world.keyring.root.appendingPathComponent("faketime").path
            try await world.startDaemon(extraEnvironment: try fakedEnvironment(offsetFile: offsetFile, monotonicToo: false, offset: "-1h"))
            try await poll("the stored token's death by real time") { Date() > storedExpiry.addingTimeInterval(0.5) }
            try "+0".write(toFile: offsetFile, atomically: true, encoding: .utf8)
            let asked = Date()
            let run = try await world.tokenctl(["token", "work", "--min-valid", "1"])
            #expect(run.status == 0, "\(run.stderr)")
            let served = run.stdout.trimmingCharacters(in: .newlines)
            #expect(served != stored, "the token that died while the daemon's clock lagged")
            let expiry = try #require(JWTClaims(token: served)?.expiresAt)
            #expect(expiry > asked, "served a token dead for \(asked.timeIntervalSince(expiry)) s")
        }
    }

    /// Found by scripts/chaos: tokend refreshes and stores a session while its wall clock is an
    /// hour ahead; the clock is set right and tokend restarts (boot time never jumped). The stored
    /// expiry, written by the clock that was ahead, must not make the token look alive for an
    /// extra hour: once it is dead by the provider's clock, it is never served.
    @Test func aClockSetBackBeforeARestartNeverResurrectsAStoredToken() async throws {
        var options = FakeFirebase.Options()
        options.lifetime = 6
        let world = try await DaemonHarness.start(options: options, startDaemon: false)
        try await withTearDown(world, tearDown: { await $0.shutdown() }) { world in
            let offsetFile = world.keyring.root.appendingPathComponent("faketime").path
            try await world.startDaemon(extraEnvironment: try fakedEnvironment(offsetFile: offsetFile, monotonicToo: false, offset: "+1h"))
            try await world.importNewUser()
            world.stopDaemon()
            let stored = try #require(try await world.storedSession()?.idToken)
            let storedExpiry = try #require(JWTClaims(token: stored)?.expiresAt)
            try await world.startDaemon(extraEnvironment: try fakedEnvironment(offsetFile: offsetFile, monotonicToo: false, offset: "+0"))
            try await poll("the stored token's death by real time") { Date() > storedExpiry.addingTimeInterval(0.5) }
            let asked = Date()
            let run = try await world.tokenctl(["token", "work", "--min-valid", "1"])
            #expect(run.status == 0, "\(run.stderr)")
            let served = run.stdout.trimmingCharacters(in: .newlines)
            let resurrected = served == stored  // compared apart: a failure message must not print tokens
            #expect(!resurrected, "served the stored token, dead for \(asked.timeIntervalSince(storedExpiry)) s")
            let expiry = try #require(JWTClaims(token: served)?.expiresAt)
            #expect(expiry > asked, "served a token dead for \(asked.timeIntervalSince(expiry)) s")
        }
    }

    /// Found by scripts/chaos: a request waits for a refresh that hangs, and the wall clock is set
    /// back two hours meanwhile. Its timeout must still end the wait on time, with an answer: a
    /// timer armed on the wall clock alone would hold the reply back by the two hours.
    @Test func aWallClockSetBackWhileARequestWaitsStillEndsItOnTime() async throws {
        try await withWorld(startDaemon: false) { world in
            let offsetFile = world.keyring.root.appendingPathComponent("faketime").path
            try await world.startDaemon(extraEnvironment: try fakedEnvironment(offsetFile: offsetFile, monotonicToo: false))
            try await world.importNewUser()
            world.fake.faults.inject(.hang, count: 1)
            async let forced = world.tokenctl(["refresh", "work", "--timeout", "3"])
            // Once the account shows `refreshing`, the request's own timer is armed: the engine
            // arms it in the same step that starts the refresh.
            try await poll("the forced refresh under way") { try await world.status().state == "refreshing" }
            try "-2h".write(toFile: offsetFile, atomically: true, encoding: .utf8)
            let run = try await forced
            #expect(run.status == 75, "exit \(run.status): \(run.stderr)")
            #expect(run.stderr.contains("still running"), "\(run.stderr)")
        }
    }
}
