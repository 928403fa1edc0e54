import Foundation
import Testing
import TokendCore
import TokendProtocol
import TokendFakes
import TokendTestSupport

/// Issue 8: the holes an adversarial review found, each shown closed against the real daemon,
/// keyring, tokenctl and fake provider.
@Suite struct HardeningTests {
    /// Items 2 and 13: six items with instants no token has (1e300, past 2^53) and one that is
    /// not JSON, written as any program in the session could. The daemon starts and answers;
    /// each account says once that its item is unreadable and what to do; nothing is retried in
    /// a loop and the items are left as they were.
    @Test func absurdAndCorruptItemsAreReportedOnceAndNeverCrash() async throws {
        let names = (1...6).map { "absurd\($0)" } + ["garbage"]
        try await withWorld(accounts: names, startDaemon: false) { world in
            var written: [String: String] = [:]
            for (index, name) in names.enumerated() {
                let instant = index % 2 == 0 ? "1e300" : "9007199254740993"
                let secret = name == "garbage"
                    ? "not a token set"
                    : #"{"refresh_token":"CANARY-\#(name)","id_token":"x","id_token_expires_at":\#(instant),"expires_at":\#(instant)}"#
                _ = try world.keyring.secretTool(["store", "--label=hostile", "application", "tokend", "account", name], stdin: secret).check()
                written[name] = secret
            }
            try await world.startDaemon()
            for name in names {
                // Sessions are read in the background after the socket opens: wait for each read.
                try await poll("\(name)'s item was read") { try await world.status(name).state != "waiting_for_keyring" }
                let status = try await world.status(name)
                #expect(status.state == "needs_login", "\(name): \(status.state)")
                #expect(status.message?.contains("tokenctl import \(name)") == true, "\(name): \(status.message ?? "")")
            }
            let table = try await world.tokenctl(["status"])
            #expect(table.status == 0, "\(table.stderr)")
            #expect(table.stdout.contains("does not hold a token set tokend can read"), "\(table.stdout)")
            let token = try await world.tokenctl(["token", "absurd1"])
            #expect(token.status == 77, "\(token.stderr)")
            // The keyring poll runs every 2 s: a window of three polls shows whether it spins.
            try await Task.sleep(for: .seconds(6))
            let log = world.daemonLog
            #expect(log.components(separatedBy: "the stored session cannot be read").count - 1 == names.count, "reported once per account")
            #expect(!log.contains("keyring operation failed"), "no retry loop")
            #expect(try await world.call(.hello).ok)
            for name in names {
                #expect(world.keyring.secretToolLookup(account: name)?.trimmingCharacters(in: .newlines) == written[name], "\(name) left as it was")
            }
        }
    }

    /// Item 3: a session imported against one emulator is never sent to another — neither after
    /// a reload that points the account elsewhere, nor after a restart with
    /// FIREBASE_AUTH_EMULATOR_HOST in the environment. Both answer config_error (78), the other
    /// endpoint receives nothing and the keyring item survives; pointing back resumes service.
    @Test func aSessionIsOnlyEverSentToTheEndpointThatIssuedIt() async throws {
        try await withWorld { world in
            let other = try await FakeFirebase.start()
            try await withTearDown(other, tearDown: { try? await $0.shutdown() }) { other in
                try await world.importNewUser()
                let stored = try #require(try await world.storedSession())
                // A reload points the account at another emulator.
                try world.writeConfig(world.firebaseAccount("work").replacingOccurrences(of: world.fake.emulatorHost, with: other.emulatorHost))
                world.signalDaemon(SIGHUP)
                try await poll("the reload applies") { try await world.status().state == "config_error" }
                let refused = try await world.tokenctl(["token", "work"])
                #expect(refused.status == 78, "\(refused.stderr)")
                #expect(refused.stderr.contains("nothing was sent"), "\(refused.stderr)")
                #expect(try await world.tokenctl(["refresh", "work"]).status == 78)
                // A restart with the variable set and no `emulator` line: the same.
                world.stopDaemon()
                try world.writeConfig("[account.work]\nprovider = \"firebase\"\napi_key = \"test-api-key\"\n")
                try await world.startDaemon(extraEnvironment: ["FIREBASE_AUTH_EMULATOR_HOST": other.emulatorHost])
                #expect(try await world.tokenctl(["token", "work"]).status == 78)
                #expect(try await world.status().state == "config_error")
                #expect(other.requests.isEmpty, "the other endpoint received \(other.requests.count) request(s)")
                #expect(try await world.storedSession()?.refreshToken == stored.refreshToken, "the item was neither deleted nor replaced")
                // Pointing back (a reload) serves again without a new import.
                try world.writeConfig(world.firebaseAccount("work"))
                world.signalDaemon(SIGHUP)
                try await poll("the reload back applies") { try await world.tokenctl(["token", "work"]).status == 0 }
            }
        }
    }

    /// Item 7: `watch` from a client that half-closes after its request (what `socat` does)
    /// keeps streaming events until the client goes.
    @Test func aWatchSurvivesTheClientsHalfClose() async throws {
        try await withWorld { world in
            try await world.importNewUser()
            let watcher = try RawConnection(path: world.socketPath)
            await watcher.send(Array("{\"op\":\"watch\",\"account\":\"work\"}\n".utf8))
            let fd = try #require(watcher.descriptor)
            shutdown(fd, Int32(SHUT_WR))
            #expect(try await watcher.response(timeout: Patience.seconds).ok)
            #expect(try await world.tokenctl(["refresh", "work"]).status == 0)
            let event = try #require(try await watcher.readLine(timeout: Patience.seconds), "the watch ended at the half-close")
            #expect(String(decoding: event, as: UTF8.self).contains("\"refreshed\""))
        }
    }

    /// Item 14, and Retry-After end to end: after a 429 asking for two minutes, neither a
    /// forced refresh nor an import reaches the provider; both answer "unavailable" (75) with
    /// the retry time.
    @Test func refreshAndImportHonourRetryAfter() async throws {
        try await withWorld { world in
            try await world.importNewUser()
            world.fake.faults.inject(.status(429, retryAfter: 120), count: 1)
            let first = try await world.tokenctl(["refresh", "work"])
            #expect(first.status == 75, "\(first.stderr)")
            let before = world.fake.requests.count
            for _ in 0..<5 {
                let again = try await world.tokenctl(["refresh", "work"])
                #expect(again.status == 75, "\(again.stderr)")
                #expect(again.stderr.contains("next try at"), "\(again.stderr)")
            }
            let session = world.fake.createUser()
            let imported = try await world.tokenctl(["import", "work"], stdin: session.refreshToken + "\n")
            #expect(imported.status == 75, "\(imported.stderr)")
            #expect(world.fake.requests.count == before, "the provider was asked again during its Retry-After")
            #expect(try await world.storedSession()?.refreshToken == session.refreshToken, "the import was stored all the same")
            #expect(try await world.status().nextRefresh != nil)
        }
    }

    /// Item 9: a provider error of 100 KiB is cut to about 512 bytes in status, events and log.
    @Test func providerTextIsCut() async throws {
        try await withWorld { world in
            try await world.importNewUser()
            let huge = String(repeating: "E", count: 100 * 1024)
            // Every attempt fails alike: a retry that succeeded before `status` is asked (a loaded
            // machine is slow to ask) would clear the error under test.
            world.fake.faults.inject(.status(503, body: #"{"error":{"code":503,"message":"\#(huge)"}}"#), count: 100)
            let refresh = try await world.tokenctl(["refresh", "work"])
            #expect(refresh.status == 75, "\(refresh.stderr)")
            let status = try await world.status()
            let message = try #require(status.lastError?.message)
            #expect(message.utf8.count <= RefreshFailure.maximumMessageBytes, "\(message.utf8.count) bytes")
            #expect(!world.daemonLog.contains(String(repeating: "E", count: 1024)))
        }
    }

    /// Item 4: a logout that lands while the keyring read of a just-added account is in flight
    /// wins: the read's result is dropped instead of reinstalling the session.
    @Test func aLogoutDuringTheKeyringReadOfAnAddedAccountWins() async throws {
        try await withWorld { world in
            try await world.importNewUser()
            world.stopDaemon()
            try world.writeConfig("")
            // Keyring calls wait a minute, not the default 5 s: the read must still be in flight when
            // the logout lands, however slowly a loaded machine gets there.
            try await world.startDaemon(arguments: ["--keyring-timeout", "60"])
            // The keyring stops answering; the reload that adds `work` starts its read.
            try world.keyring.pauseKeyring()
            var resumed = false
            defer { if !resumed { try? world.keyring.resumeKeyring() } }
            try world.writeConfig(world.firebaseAccount("work"))
            world.signalDaemon(SIGHUP)
            try await poll("the reload adds the account") { (try? await world.status()) != nil }
            async let logout = world.tokenctl(["logout", "work"])
            try await poll("the logout reaches the daemon") { try await world.status().message?.contains("logged out") == true }
            try world.keyring.resumeKeyring()
            resumed = true
            #expect(try await logout.status == 0)
            try await Task.sleep(for: .seconds(1))  // room for a wrongly applied read to show
            #expect(try await world.status().state == "needs_login")
            #expect(try await world.tokenctl(["token", "work"]).status == 77)
            #expect(try await world.storedSession() == nil)
        }
    }

    /// A broken configuration on SIGHUP keeps the last good one serving.
    @Test func aBrokenConfigurationOnReloadKeepsTheLastGoodOne() async throws {
        try await withWorld { world in
            try await world.importNewUser()
            try world.writeConfig("[account.work]\nprovider = \n")
            world.signalDaemon(SIGHUP)
            try await poll("the reload is refused") { world.daemonLog.contains("config.toml:2") }
            #expect(try await world.tokenctl(["token", "work"]).status == 0)
            #expect(try await world.tokenctl(["refresh", "work"]).status == 0)
        }
    }

    /// Item 6: 16 MiB of empty lines from one client. Empty lines count against the connection:
    /// a few are fine (a request after them is answered), a flood gets `bad_request` and is cut,
    /// and other clients are answered throughout.
    @Test func aNewlineFloodIsCutAndOthersAreServed() async throws {
        try await withWorld { world in
            let probe = ServedProbe(world)
            let patient = try RawConnection(path: world.socketPath)
            await patient.send(Array("\n\n\r\n{\"op\":\"hello\",\"id\":\"after\"}\n".utf8))
            #expect(try await patient.response(timeout: Patience.seconds).id == .string("after"))
            let flooder = try RawConnection(path: world.socketPath)
            let flood = [UInt8](repeating: UInt8(ascii: "\n"), count: 16 * 1024 * 1024)
            let (sent, outcome) = await flooder.sendNonBlocking(flood, stallLimit: Patience.seconds)
            #expect(outcome == .closed, "the flood was not cut (\(sent) bytes taken, \(outcome))")
            // The refusal may be lost to a reset (the daemon closes with our bytes unread); if it
            // arrives, it says why.
            if let refusal = try? await flooder.response(timeout: Patience.seconds) {
                #expect(refusal.error?.code == .badRequest)
            }
            await probe.finish()
        }
    }

    /// Item 15: a reload removes the account while its refresh is in flight at a provider that
    /// rotates and revokes the previous token. The rotated token still reaches the keyring, so
    /// adding the account back serves without a new import.
    @Test func aRotationThatFinishesAfterItsAccountWasRemovedIsSaved() async throws {
        var options = FakeFirebase.Options()
        options.rotate = true
        options.revokePrevious = true
        try await withWorld(options: options) { world in
            let session = try await world.importNewUser()
            world.fake.update { $0.latency = 2 }
            let before = world.fake.requests.count
            async let refresh = world.tokenctl(["refresh", "work"])
            try await poll("the refresh reaches the provider") { world.fake.requests.count > before }
            try world.writeConfig("")
            world.signalDaemon(SIGHUP)
            _ = try await refresh
            let newest = try #require(world.fake.newestRefreshToken(uid: session.uid))
            try await poll("the rotated token is saved") { try await world.storedSession()?.refreshToken == newest }
            world.fake.update { $0.latency = 0 }
            try world.writeConfig(world.firebaseAccount("work"))
            world.signalDaemon(SIGHUP)
            try await poll("the account is back") { try await world.tokenctl(["token", "work", "--min-valid", "1"]).status == 0 }
        }
    }

    /// A request waiting on a refresh when the daemon is stopped gets an answer (tokend is
    /// stopping: try again, exit 75), not a connection closed under it (exit 69).
    @Test func aRequestInFlightAtShutdownIsToldTokendIsStopping() async throws {
        try await withWorld { world in
            try await world.importNewUser()
            world.fake.faults.inject(.hang, count: 1)
            async let forced = world.tokenctl(["refresh", "work", "--timeout", "20"])
            try await poll("the forced refresh under way") { try await world.status().state == "refreshing" }
            _ = try await offPool { world.stopDaemon() }
            let run = try await forced
            #expect(run.status == 75, "exit \(run.status): \(run.stderr)")
            #expect(run.stderr.contains("shutting down"), "\(run.stderr)")
        }
    }
}
