import Foundation
import Testing
import TokendCore
import TokendFakes
import TokendTestSupport

/// Token files (issue 21, item 1) with the real daemon and the real clients: the file follows
/// login, refresh, logout and `needs_login`; a provider outage with short-lived tokens never
/// leaves it holding a dead token; boto3 and google-auth read it (README's configuration as
/// written) against loopback STS stand-ins that accept only the account's live token.
@Suite struct TokenFileEndToEndTests {
    static func sinks(_ world: DaemonHarness) -> String { world.keyring.root.appendingPathComponent("run/tokend/sinks").path }

    static func contents(_ path: String) -> String? {
        FileManager.default.contents(atPath: path).map { String(decoding: $0, as: UTF8.self) }
    }

    static func mode(_ path: String) -> mode_t? {
        var info = stat()
        return lstat(path, &info) == 0 ? info.st_mode & 0o7777 : nil
    }

    /// A world whose account `work` has `sink` (TOML) in its table.
    static func world(sink: String, options: FakeFirebase.Options = .init()) async throws -> DaemonHarness {
        let world = try await DaemonHarness.start(options: options, startDaemon: false)
        do {
            try world.writeConfig(world.firebaseAccount("work") + "\n" + sink + "\n")
            try await world.startDaemon()
        } catch {
            await world.shutdown()
            throw error
        }
        return world
    }

    @Test func theFileFollowsLoginRefreshLogoutAndNeedsLogin() async throws {
        let world = try await Self.world(sink: #"sink = { path = "id", min_valid = "1m" }"#)
        try await withTearDown(world, tearDown: { await $0.shutdown() }) { world in
            let path = Self.sinks(world) + "/id"
            #expect(Self.contents(path) == nil, "no session, no file")
            try await world.importNewUser()
            let first = try await world.tokenctl(["token", "work"]).stdout.trimmed
            try await poll("the file holds the live token") { Self.contents(path) == first }
            #expect(Self.mode(path) == 0o600)
            #expect(Self.mode(Self.sinks(world)) == 0o700)
            #expect(try await world.tokenctl(["refresh", "work"]).status == 0)
            let second = try await world.tokenctl(["token", "work"]).stdout.trimmed
            #expect(second != first)
            try await poll("the file holds the refreshed token") { Self.contents(path) == second }
            #expect(try await world.tokenctl(["logout", "work"]).status == 0)
            try await poll("logout removes the file") { Self.contents(path) == nil }

            try await world.importNewUser()
            try await poll("a new session writes it again") { Self.contents(path) != nil }
            world.fake.faults.inject(.firebaseError("TOKEN_EXPIRED"), count: 1)
            #expect(try await world.tokenctl(["refresh", "work"]).status == 77)
            try await poll("needs_login removes the file") { Self.contents(path) == nil }

            try await world.importNewUser()
            try await poll("written again") { Self.contents(path) != nil }
            #expect(world.stopDaemon() == 0)
            #expect(Self.contents(path) == nil, "tokend removes its files when it stops: nothing would refresh them")
            let left = (try? FileManager.default.contentsOfDirectory(atPath: Self.sinks(world))) ?? []
            #expect(left.isEmpty, "no temporary file is left: \(left)")
        }
    }

    /// Token files outlive a kill -9 (nothing removes them); the next start removes every
    /// regular file of the directory that no sink names any more — a dropped sink's, a removed
    /// account's, a write's stray temporary — and only those: the configured file is written
    /// again, and a link, a directory and what they lead to stay. Before, the three stayed for
    /// good, holding tokens nobody refreshed.
    @Test func aRestartAfterAKillRemovesTheFilesNoSinkNames() async throws {
        let world = try await DaemonHarness.start(startDaemon: false)
        try await withTearDown(world, tearDown: { await $0.shutdown() }) { world in
            try world.writeConfig(world.firebaseAccount("work") + """

                sink = [{ path = "id", min_valid = "1m" }, { path = "dropped", min_valid = "1m" }]
                """ + "\n" + world.firebaseAccount("play") + """

                sink = { path = "play-id", min_valid = "1m" }
                """)
            try await world.startDaemon()
            let sinks = Self.sinks(world)
            try await world.importNewUser(into: "work")
            try await world.importNewUser(into: "play")
            try await poll("every file is written") { ["id", "dropped", "play-id"].allSatisfy { Self.contents(sinks + "/" + $0) != nil } }
            let playToken = try #require(Self.contents(sinks + "/play-id"))
            world.kill9()
            // What a daemon killed mid-write leaves, and what no daemon wrote and none may touch.
            try "half-written".write(toFile: sinks + "/.dropped.tmp", atomically: false, encoding: .utf8)
            let outside = world.keyring.root.appendingPathComponent("outside").path
            try "not tokend's".write(toFile: outside, atomically: false, encoding: .utf8)
            try FileManager.default.createSymbolicLink(atPath: sinks + "/link", withDestinationPath: outside)
            try FileManager.default.createDirectory(atPath: sinks + "/directory", withIntermediateDirectories: false)
            try "inside".write(toFile: sinks + "/directory/file", atomically: false, encoding: .utf8)

            // The sink `dropped` and the account `play` are gone from the configuration.
            try world.writeConfig(world.firebaseAccount("work") + "\nsink = { path = \"id\", min_valid = \"1m\" }\n")
            try await world.startDaemon()
            let live = try await world.tokenctl(["token", "work"]).stdout.trimmed
            try await poll("the configured file holds the live token") { Self.contents(sinks + "/id") == live }
            let left = try FileManager.default.contentsOfDirectory(atPath: sinks).sorted()
            #expect(left == ["directory", "id", "link"], "\(left)")
            #expect(Self.contents(outside) == "not tokend's" && Self.contents(sinks + "/directory/file") == "inside")
            #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: sinks + "/link")) == outside)
            let log = world.daemonLog
            for name in [".dropped.tmp", "dropped", "play-id"] {
                #expect(log.contains("token file no sink names removed") && log.contains("\(sinks)/\(name)"), "not logged: \(name)")
            }
            #expect(!log.contains(playToken), "the token is not logged")
        }
    }

    /// A second tokend refused because the first serves the socket (issue 45, item 2) changes
    /// nothing on disk, whatever its configuration: before, one naming other sinks removed the
    /// running daemon's file as a leftover, and one naming the same removed it as it adopted the
    /// sink (no session yet) and again as it stopped.
    @Test func aSecondDaemonRefusedAsAlreadyRunningLeavesTheFilesAlone() async throws {
        let world = try await Self.world(sink: #"sink = { path = "id", min_valid = "1m" }"#)
        try await withTearDown(world, tearDown: { await $0.shutdown() }) { world in
            let path = Self.sinks(world) + "/id"
            try await world.importNewUser()
            let token = try await world.tokenctl(["token", "work"]).stdout.trimmed
            try await poll("the file holds the live token") { Self.contents(path) == token }
            let other = URL(fileURLWithPath: world.configPath).deletingLastPathComponent().appendingPathComponent("other.toml").path
            try (world.firebaseAccount("work") + "\n").write(toFile: other, atomically: true, encoding: .utf8)
            for config in [other, world.configPath] {
                let run = try await offPool {
                    try ChildProcess.run(DaemonHarness.binDirectory + "/tokend", ["--config", config], environment: world.environment, timeout: Patience.seconds)
                }
                #expect(run.status == 75, "refused as already running: \(run.status) \(run.stderr)")
                #expect(Self.contents(path) == token, "the running daemon's file stays (second daemon's --config \(config))")
            }
            #expect(try await world.tokenctl(["token", "work"]).status == 0, "the first daemon still serves")
        }
    }

    /// Short-lived tokens and a provider outage: every look at the file finds either nothing or a
    /// token with time left; the file goes before its token dies; it comes back after the outage.
    @Test func anOutageNeverLeavesADeadTokenInTheFile() async throws {
        let minValid = 3.0
        var options = FakeFirebase.Options()
        options.lifetime = 12
        let world = try await Self.world(sink: "sink = { path = \"id\", min_valid = \"\(Int(minValid))s\" }", options: options)
        try await withTearDown(world, tearDown: { await $0.shutdown() }) { world in
            let path = Self.sinks(world) + "/id"
            try await world.importNewUser()
            try await poll("written") { Self.contents(path) != nil }
            world.fake.faults.inject(.status(503), forSeconds: 3600)
            var held: Set<String> = []
            var removedWith: Date?
            try await poll(timeout: 60, "the file is removed during the outage") {
                let token = Self.contents(path)
                let now = Date()
                guard let token else {
                    removedWith = now
                    return true
                }
                held.insert(token)
                let expiry = try #require(JWTClaims(token: token)?.expiresAt)
                #expect(expiry > now, "the file held a token that had expired")
                return false
            }
            let expiries = held.compactMap { JWTClaims(token: $0)?.expiresAt }
            let last = try #require(expiries.max())
            let removed = try #require(removedWith)
            #expect(removed < last, "removed before the token expired")
            // Proactive refreshes kept failing meanwhile: the outage is what removed the file.
            #expect(world.fake.requests.count > 1)
            world.fake.faults.clear()
            try await poll(timeout: 60, "a new token once the provider answers again") {
                guard let token = Self.contents(path) else { return false }
                return !held.contains(token)
            }
        }
    }

    // MARK: - Real clients

    /// README's token-file configuration, as written: its `sink = [ … ]` lines.
    static func readmeSinks() throws -> String {
        let section = try Repository.readmeSection("### Token files")
        let start = try #require(section.range(of: "sink = ["))
        let end = try #require(section.range(of: "\n]\n", range: start.upperBound..<section.endIndex))
        return String(section[start.lowerBound..<end.upperBound])
    }

    static func runClient<T: Decodable>(_ script: String, _ world: DaemonHarness, as type: T.Type) async throws -> T {
        let arguments = [
            Repository.path("Tests/Clients/\(script)"), Repository.path("README.md"),
            DaemonHarness.binDirectory + "/tokenctl", "work",
        ]
        let environment = world.environment
        let run = try await offPool { try ChildProcess.run(Repository.clientsPython, arguments, environment: environment) }
        guard run.status == 0, let line = run.stdout.split(separator: "\n").last else {
            throw HarnessError("\(script) failed (\(run.status)): \(run.stderr)")
        }
        return try JSONDecoder().decode(T.self, from: Data(line.utf8))
    }

    struct AWSOutcome: Decodable {
        var ok: Bool
        var error: String?
        var files: [String]
        var received: [String]
        var identities: [String]
    }

    @Test func boto3AssumesTheRoleWithTheFilesTokenAndReadsItAgainAfterARefresh() async throws {
        let world = try await Self.world(sink: try Self.readmeSinks())
        try await withTearDown(world, tearDown: { await $0.shutdown() }) { world in
            try await world.importNewUser()
            try await poll("the AWS token file is written") { Self.contents(Self.sinks(world) + "/aws-web-identity") != nil }
            let outcome = try await Self.runClient("aws_web_identity.py", world, as: AWSOutcome.self)
            #expect(outcome.ok, "boto3: \(outcome.error ?? "")")
            #expect(outcome.received.count == 2, "one AssumeRoleWithWebIdentity per set of credentials: \(outcome.received.count)")
            #expect(outcome.received == outcome.files, "STS got the file's token each time, the refreshed one the second time")
            #expect(outcome.files.count == 2 && outcome.files[0] != outcome.files[1])
            #expect(outcome.identities.allSatisfy { $0.hasSuffix("assumed-role/tokend-web-identity/tokend") }, "\(outcome.identities)")
        }
    }

    struct GoogleOutcome: Decodable {
        var ok: Bool
        var error: String?
        var files: [String]
        var received: [[String: String]]
    }

    @Test func googleAuthExchangesTheFilesTokenAndReadsItAgainAfterARefresh() async throws {
        let world = try await Self.world(sink: try Self.readmeSinks())
        try await withTearDown(world, tearDown: { await $0.shutdown() }) { world in
            try await world.importNewUser()
            try await poll("the Google token file is written") { Self.contents(Self.sinks(world) + "/gcp-subject-token") != nil }
            let outcome = try await Self.runClient("google_token_file.py", world, as: GoogleOutcome.self)
            #expect(outcome.ok, "google-auth: \(outcome.error ?? "")")
            #expect(outcome.received.map { $0["subject_token"] ?? "" } == outcome.files, "STS got the file's token each time")
            #expect(outcome.files.count == 2 && outcome.files[0] != outcome.files[1])
            #expect(outcome.received.allSatisfy { $0["subject_token_type"] == "urn:ietf:params:oauth:token-type:id_token" })
        }
    }
}
