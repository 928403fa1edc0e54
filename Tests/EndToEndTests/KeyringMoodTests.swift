import Foundation
import Testing
import TokendCore
import TokendProtocol
import TokendFakes
import TokendTestSupport

/// Issue 3, item 3: the keyring's moods, with a real gnome-keyring on a private bus.
@Suite struct KeyringMoodTests {
    /// No session bus at all: the daemon starts, says so, and serves from memory.
    @Test func noSecretServiceServesImportedTokensFromMemory() async throws {
        try await withWorld(startDaemon: false) { world in
            try await world.startDaemon(extraEnvironment: ["DBUS_SESSION_BUS_ADDRESS": "unix:path=/nonexistent/bus"])
            let session = world.fake.createUser()
            let imported = try await world.tokenctl(["import", "work"], stdin: session.refreshToken)
            #expect(imported.status == 0, "\(imported.stderr)")
            #expect(try await world.tokenctl(["token", "work"]).status == 0)
            let status = try await world.status()
            #expect(status.keyring == "unavailable")
            #expect(status.unsaved == true)
            #expect(world.daemonLog.contains("no usable Secret Service"))
            #expect(try await world.storedSession() == nil, "nothing reached the (other) keyring")
        }
    }

    /// Locked at start: not "no session". The account waits for the keyring, `token` says
    /// "try later" (75), and unlocking brings the stored session back without a login.
    @Test func lockedAtStartIsNotEmpty() async throws {
        try await withWorld { world in
            try await world.importNewUser()
            let stored = try #require(try await world.storedSession())
            world.stopDaemon()
            try world.keyring.lock()
            try await world.startDaemon()
            // The socket opens before the keyring is read: the first read's answer comes a moment later.
            try await poll("the keyring is found locked") { try await world.status().keyring == "locked" }
            #expect(try await world.status().state == "waiting_for_keyring")
            let token = try await world.tokenctl(["token", "work"])
            #expect(token.status == 75, "\(token.stderr)")
            #expect(token.stderr.contains("unlock"), "\(token.stderr)")
            try world.keyring.unlock()
            try await poll("the stored session loads after unlocking") { try await world.status().state == "active" }
            #expect(try await world.tokenctl(["token", "work"]).status == 0)
            #expect(try await world.storedSession() == stored, "locked was never mistaken for empty: the item is untouched")
        }
    }

    /// Locked mid-run with a rotating provider: the rotated refresh token is kept in memory and
    /// written back as soon as the keyring is unlocked — not at the next refresh.
    @Test func lockedMidRunWritesRotatedTokenBackOnUnlock() async throws {
        var options = FakeFirebase.Options()
        options.rotate = true
        try await withWorld(options: options) { world in
            let session = try await world.importNewUser()
            try world.keyring.lock()
            #expect(try await world.tokenctl(["refresh", "work"]).status == 0)
            #expect(try await world.tokenctl(["token", "work"]).status == 0, "served from memory")
            let status = try await world.status()
            #expect(status.keyring == "locked")
            #expect(status.unsaved == true)
            let requests = world.fake.requests.count
            try world.keyring.unlock()
            try await poll("written back after unlock") {
                try await world.storedSession()?.refreshToken == world.fake.newestRefreshToken(uid: session.uid)
            }
            #expect(world.fake.requests.count == requests, "written back without waiting for a refresh")
            try await poll("status clears") { try await world.status().unsaved == nil }
        }
    }

    /// The same, but a reload removes the account while its rotated token waits for the keyring:
    /// the provider revoked the stored token, so the one in memory is the only live one, and it
    /// is still written back on unlock.
    @Test func anAccountRemovedWhileItsRotatedTokenWaitsIsStillWrittenBack() async throws {
        var options = FakeFirebase.Options()
        options.rotate = true
        options.revokePrevious = true
        try await withWorld(options: options) { world in
            let session = try await world.importNewUser()
            try world.keyring.lock()
            #expect(try await world.tokenctl(["refresh", "work"]).status == 0)
            #expect(try await world.status().unsaved == true)
            try world.writeConfig("")
            world.signalDaemon(SIGHUP)
            try await poll("the account removed") { world.daemonLog.contains("account removed from the configuration") }
            try world.keyring.unlock()
            let newest = try #require(world.fake.newestRefreshToken(uid: session.uid))
            try await poll("the rotated token written back though its account is gone") {
                try await world.storedSession()?.refreshToken == newest
            }
        }
    }

    /// gnome-keyring restarts mid-run: the daemon reconnects and keeps writing.
    @Test func keyringRestartMidRunReconnects() async throws {
        var options = FakeFirebase.Options()
        options.rotate = true
        try await withWorld(options: options) { world in
            let session = try await world.importNewUser()
            try world.keyring.restart()
            #expect(try await world.tokenctl(["refresh", "work"]).status == 0)
            try await poll("the rotated token reaches the restarted keyring") {
                try await world.storedSession()?.refreshToken == world.fake.newestRefreshToken(uid: session.uid)
            }
            #expect(try await world.status().keyring == "available")
        }
    }

    /// A Secret Service that never answers (gnome-keyring frozen): keyring calls time out, the
    /// socket keeps answering `token` from memory, and the session is written once it thaws.
    @Test func aFrozenKeyringNeverStallsTheSocket() async throws {
        var options = FakeFirebase.Options()
        options.rotate = true
        try await withWorld(options: options) { world in
            let session = try await world.importNewUser()
            try world.keyring.pauseKeyring()
            let refresh = Task.detached { try await world.tokenctl(["refresh", "work"]) }
            let client = SharedClient(try BlockingClient(path: world.socketPath))
            // A functional bound, not a benchmark: far below the keyring's 5 s deadline.
            client.connection.setReadTimeout(seconds: 1)
            var latencies: [Double] = []
            for _ in 0..<200 {
                let asked = ContinuousClock.now
                let response = try await client.call(.token(TokenArgs(account: "work", minValid: 1)))
                #expect(response.ok, "\(String(describing: response.error))")
                let elapsed = ContinuousClock.now - asked
                latencies.append(Double(elapsed.components.attoseconds) / 1e15 + Double(elapsed.components.seconds) * 1000)
            }
            #expect(try await refresh.value.status == 0, "the refresh completes despite the frozen keyring")
            let sorted = latencies.sorted()
            print("frozen keyring: token p50 \(sorted[100]) ms, p99 \(sorted[197]) ms, max \(sorted.last!) ms over 200 requests")
            try await poll("the keyring write times out and is noted") { try await world.status().unsaved == true }
            try world.keyring.resumeKeyring()
            try await poll("written back after the keyring thaws") {
                try await world.storedSession()?.refreshToken == world.fake.newestRefreshToken(uid: session.uid)
            }
        }
    }
}
