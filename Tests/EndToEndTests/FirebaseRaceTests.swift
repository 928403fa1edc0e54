import Foundation
import Testing
import TokendCore
import TokendProtocol
import TokendTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// Issue 10, races and secrets: the newest user action wins over slow refreshes and slow
/// sign-ins, and no password, custom token or ID token shows up where it must not.
@Suite(.serialized) struct FirebaseRaceTests {
    /// How long the fake holds back the slow answer: long enough that the other action (one
    /// tokenctl run, well under a second) lands first even on a loaded 2-core machine; the test
    /// waits for the slow request to arrive before starting it.
    static let slow = 6.0

    /// Waits until the fake has logged a request whose path ends with `suffix`.
    func awaitRequest(_ world: DaemonHarness, _ suffix: String) async throws {
        try await poll("a request to \(suffix)") { world.fake.requests.contains { $0.path.hasSuffix(suffix) } }
    }

    /// The slow refresh's answer reached the daemon, which dropped it as stale (its log says so).
    func awaitDroppedRefresh(_ world: DaemonHarness) async throws {
        try await poll("the slow refresh's answer to be dropped; log:\n\(world.daemonLog)") {
            world.daemonLog.contains("its result is dropped")
        }
    }

    @Test func aSignInDuringASlowRefreshWins() async throws {
        try await withWorld { world in
            try await world.importNewUser()
            world.fake.faults.inject(.delay(Self.slow), count: 1)
            let seen = world.fake.requests.count
            async let refresh = world.tokenctl(["refresh", "work"])
            try await poll("the slow refresh to arrive") { world.fake.requests.count > seen }
            let login = try await world.tokenctl(["login", "work", "--anonymous"])
            #expect(login.status == 0, "\(login.stderr)")
            let signUp = try #require(world.fake.requests.last { $0.path.hasSuffix("accounts:signUp") })
            _ = try await refresh
            let slowRefresh = try #require(world.fake.requests.last { $0.path.contains("securetoken") })
            #expect(slowRefresh.status == 200, "the refresh succeeded at the fake; its result must be dropped")
            try await awaitDroppedRefresh(world)
            #expect(try await world.storedSession()?.refreshToken == signUp.issuedRefreshToken)
            let token = try await world.tokenctl(["token", "work"])
            #expect(IDTokenClaims(token: String(token.stdout.dropLast()))?.uid == signUp.uid)
        }
    }

    @Test func twoSignInsTheLaterIssuedWinsWhateverOrderTheyFinish() async throws {
        try await withWorld { world in
            _ = world.fake.createUser(email: "slow@example.com", password: "slow-password")
            _ = world.fake.createUser(email: "fast@example.com", password: "fast-password")
            world.fake.update { $0.signInLatency = ["slow@example.com": Self.slow] }
            async let first = world.tokenctl(["login", "work", "--email", "slow@example.com"], stdin: "slow-password\n")
            try await awaitRequest(world, "accounts:signInWithPassword")
            let second = try await world.tokenctl(["login", "work", "--email", "fast@example.com"], stdin: "fast-password\n")
            #expect(second.status == 0, "\(second.stderr)")
            let earlier = try await first
            #expect(earlier.status == 75, "\(earlier.stderr)")
            #expect(earlier.stderr.contains("a newer command changed work"), "\(earlier.stderr)")
            #expect(world.daemonLog.contains("its session is dropped"))
            let fast = try #require(world.fake.requests.last { $0.path.hasSuffix("accounts:signInWithPassword") && $0.status == 200 && $0.issuedRefreshToken != nil && $0.uid != nil && world.fake.user($0.uid!)?.email == "fast@example.com" })
            #expect(try await world.storedSession()?.refreshToken == fast.issuedRefreshToken)
            let token = try await world.tokenctl(["token", "work"])
            #expect(IDTokenClaims(token: String(token.stdout.dropLast()))?.email == "fast@example.com")
        }
    }

    @Test func aDeleteDuringASlowRefreshLeavesNoSessionBehind() async throws {
        try await withWorld { world in
            let session = try await world.importNewUser()
            world.fake.faults.inject(.delay(Self.slow), count: 1)
            let seen = world.fake.requests.count
            async let refresh = world.tokenctl(["refresh", "work"])
            try await poll("the slow refresh to arrive") { world.fake.requests.count > seen }
            let deleted = try await world.tokenctl(["account", "delete", "work", "--yes"])
            #expect(deleted.status == 0, "\(deleted.stderr)")
            _ = try await refresh
            try await awaitDroppedRefresh(world)
            #expect(!world.fake.hasUser(session.uid))
            #expect(try await world.storedSession() == nil)
            #expect(try await world.status().state == "needs_login")
            #expect(try await world.tokenctl(["token", "work"]).status == 77)
        }
    }

    /// A password, a custom token and the issued ID tokens never appear in the daemon's log, in
    /// any event, in the argv or environment of any process while a sign-in runs, or in any
    /// file of the test's world outside the keyring.
    @Test func canarySecretsStayInTheKeyring() async throws {
        try await withWorld { world in
            let password = "canary-password-\(UUID().uuidString)"
            let customToken = "canary-custom-\(UUID().uuidString.prefix(8))"
            let watcher = try EventRecorder(socketPath: world.socketPath, profile: true)
            world.fake.update { $0.signInLatency = ["canary@example.com": Self.slow] }
            async let signUp = world.tokenctl(["login", "work", "--email", "canary@example.com", "--create"], stdin: password + "\n")
            try await awaitRequest(world, "accounts:signUp")
            // While the sign-up is held back at the fake, tokenctl and tokend are both alive.
            let commandLines = Self.everyProcessText()
            #expect(try await signUp.status == 0)
            let custom = try await world.tokenctl(["login", "work", "--custom-token"], stdin: customToken + "\n")
            #expect(custom.status == 0, "\(custom.stderr)")
            let idTokens = world.fake.requests.compactMap(\.issuedIDToken)
            #expect(idTokens.count >= 2)
            let secrets = [password, customToken] + idTokens
            let files = Self.filesText(under: world.keyring.root, skipping: ["keyrings"])
            // Both logins' events reach the watcher on its own connection, after their answers.
            try await poll(timeout: Patience.seconds, "two signed_in events; saw \(watcher.lines.withLock { $0 })") {
                watcher.events.count(where: { $0.event == .signedIn }) >= 2
            }
            let events = watcher.lines.withLock { $0 }.joined(separator: "\n")
            for secret in secrets {
                #expect(!world.daemonLog.contains(secret), "in the daemon's log")
                #expect(!events.contains(secret), "in an event")
                #expect(!commandLines.contains(secret), "in a process's argv or environment")
                #expect(!files.contains(secret), "in a file outside the keyring")
            }
        }
    }

    /// The argv and (where readable) environment of every process on the machine.
    static func everyProcessText() -> String {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        var text = ""
        for pid in entries where pid.allSatisfy(\.isNumber) {
            for part in ["cmdline", "environ"] {
                if let data = FileManager.default.contents(atPath: "/proc/\(pid)/\(part)") {
                    text += String(decoding: data, as: UTF8.self) + "\n"
                }
            }
        }
        return text
    }

    /// Every regular file under `root` but the keyring's own directory, as text.
    static func filesText(under root: URL, skipping: Set<String>) -> String {
        guard let walker = FileManager.default.enumerator(at: root, includingPropertiesForKeys: [.isRegularFileKey]) else { return "" }
        var text = ""
        for case let url as URL in walker {
            if skipping.contains(url.lastPathComponent) {
                walker.skipDescendants()
                continue
            }
            guard (try? url.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true,
                let data = FileManager.default.contents(atPath: url.path)
            else { continue }
            text += String(decoding: data, as: UTF8.self)
        }
        return text
    }
}
