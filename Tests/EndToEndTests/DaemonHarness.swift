import Foundation
import Synchronization
import TokendCore
import TokendProtocol
import TokendTestSupport

/// One end-to-end world: a private bus and gnome-keyring, the fake Firebase project on
/// 127.0.0.1, and the real `tokend` binary talking to both, driven with the real `tokenctl`.
/// Accessed from one test at a time, so a lock-free class is enough.
final class DaemonHarness: @unchecked Sendable {  // one test owns it; the lock guards the process handle
    let keyring: PrivateKeyring
    let fake: FakeFirebase
    let socketPath: String
    let configPath: String
    let logPath: String
    private let daemon = Mutex<Process?>(nil)
    private var restarts = 0

    /// Where the binaries under test are: `TOKEND_BIN_DIR` (scripts/test sets it), else beside
    /// the test bundle, which is where `swift build` puts them.
    static let binDirectory: String = {
        if let dir = ProcessInfo.processInfo.environment["TOKEND_BIN_DIR"], !dir.isEmpty { return dir }
        let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var url = URL(fileURLWithPath: executable).deletingLastPathComponent()
        while url.path != "/", !FileManager.default.fileExists(atPath: url.appendingPathComponent("tokend").path) {
            url = url.deletingLastPathComponent()
        }
        return url.path
    }()

    /// How long a test waits for the daemon to come up: generous for two shared CI cores.
    static let startTimeout: Double = 30

    init(keyring: PrivateKeyring, fake: FakeFirebase) {
        self.keyring = keyring
        self.fake = fake
        socketPath = keyring.root.appendingPathComponent("run/tokend/tokend.sock").path
        configPath = keyring.root.appendingPathComponent("home/.config/tokend/config.toml").path
        logPath = keyring.root.appendingPathComponent("tokend.log").path
    }

    /// A world with one Firebase account `work` pointing at a fresh fake.
    static func start(options: FakeFirebase.Options = .init(), accounts: [String] = ["work"], startDaemon: Bool = true) async throws -> DaemonHarness {
        let keyring = try PrivateKeyring.start()
        let fake = try await FakeFirebase.start(options: options)
        let harness = DaemonHarness(keyring: keyring, fake: fake)
        try harness.writeConfig(accounts.map { harness.firebaseAccount($0) }.joined(separator: "\n"))
        if startDaemon { try await harness.startDaemon() }
        return harness
    }

    func firebaseAccount(_ name: String, apiKey: String = "test-api-key") -> String {
        """
        [account.\(name)]
        provider = "firebase"
        api_key = "\(apiKey)"
        emulator = "\(fake.emulatorHost)"
        """
    }

    func writeConfig(_ text: String) throws {
        let url = URL(fileURLWithPath: configPath)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try text.write(to: url, atomically: true, encoding: .utf8)
    }

    var environment: [String: String] {
        var environment = keyring.childEnvironment
        environment["TOKEND_CONFIG"] = configPath
        environment["TOKEND_SOCKET"] = socketPath
        environment["FIREBASE_AUTH_EMULATOR_HOST"] = nil
        return environment
    }

    /// Starts tokend (stderr appended to `logPath`) and waits until it answers `hello`.
    func startDaemon(extraEnvironment: [String: String] = [:], arguments: [String] = [], launcher: [String] = []) async throws {
        let process = Process()
        if launcher.isEmpty {
            process.executableURL = URL(fileURLWithPath: Self.binDirectory + "/tokend")
            process.arguments = arguments
        } else {
            process.executableURL = URL(fileURLWithPath: launcher[0])
            process.arguments = Array(launcher.dropFirst()) + [Self.binDirectory + "/tokend"] + arguments
        }
        process.environment = environment.merging(extraEnvironment) { $1 }
        if !FileManager.default.fileExists(atPath: logPath) { FileManager.default.createFile(atPath: logPath, contents: nil) }
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        log.seekToEndOfFile()
        process.standardError = log
        process.standardOutput = log
        process.standardInput = FileHandle.nullDevice
        try process.run()
        daemon.withLock { $0 = process }
        try await poll(timeout: Self.startTimeout, "tokend did not answer on \(socketPath); log:\n\(daemonLog)") {
            guard process.isRunning else { throw HarnessError("tokend exited with \(process.terminationStatus); log:\n\(self.daemonLog)") }
            return (try? self.call(Request(op: "hello"))) != nil
        }
    }

    var daemonPID: Int32? { daemon.withLock { $0?.processIdentifier } }

    func kill9() {
        guard let process = daemon.withLock({ $0 }) else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// SIGTERM and wait; returns the exit status.
    @discardableResult
    func stopDaemon() -> Int32? {
        guard let process = daemon.withLock({ $0 }), process.isRunning else { return nil }
        process.terminate()
        process.waitUntilExit()
        return process.terminationStatus
    }

    func signalDaemon(_ signal: Int32) {
        if let pid = daemonPID { kill(pid, signal) }
    }

    func shutdown() async {
        stopDaemon()
        try? await fake.shutdown()
        keyring.stop()
    }

    var daemonLog: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    // MARK: clients

    func call(_ request: Request, timeout: Double = 30) throws -> Response {
        let client = try BlockingClient(path: socketPath)
        client.setReadTimeout(seconds: timeout)
        return try client.call(request)
    }

    struct Run: Sendable {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    /// Runs the real tokenctl against this daemon, its output captured through files.
    func tokenctl(_ arguments: [String], stdin: String? = nil) throws -> Run {
        let scratch = keyring.root.appendingPathComponent("tokenctl-\(UUID().uuidString)").path
        defer {
            for suffix in [".out", ".err", ".in"] { unlink(scratch + suffix) }
        }
        var input = "/dev/null"
        if let stdin {
            // Test doubles' tokens only, in the test's private 0700 directory.
            input = scratch + ".in"
            guard FileManager.default.createFile(atPath: input, contents: Data(stdin.utf8), attributes: [.posixPermissions: 0o600]) else {
                throw HarnessError("cannot write \(input)")
            }
        }
        let status = try spawnAndWait(
            Self.binDirectory + "/tokenctl", arguments, environment: environment, stdin: input, stdout: scratch + ".out", stderr: scratch + ".err")
        let stdout = (try? String(contentsOfFile: scratch + ".out", encoding: .utf8)) ?? ""
        let stderr = (try? String(contentsOfFile: scratch + ".err", encoding: .utf8)) ?? ""
        return Run(status: status, stdout: stdout, stderr: stderr)
    }

    /// A user at the fake, imported into `account` with `tokenctl import` (token on stdin).
    @discardableResult
    func importNewUser(into account: String = "work") throws -> FakeFirebase.Session {
        let session = fake.createUser()
        let run = try tokenctl(["import", account], stdin: session.refreshToken + "\n")
        guard run.status == 0 else { throw HarnessError("import failed (\(run.status)): \(run.stderr)") }
        return session
    }

    /// The account's keyring item as `secret-tool` sees it (spawned like tokenctl: no pipes).
    func storedSession(_ account: String = "work") throws -> TokenSet? {
        let scratch = keyring.root.appendingPathComponent("secret-tool-\(UUID().uuidString)").path
        defer {
            unlink(scratch + ".out")
            unlink(scratch + ".err")
        }
        let status = try spawnAndWait(
            "/usr/bin/secret-tool", ["lookup", "application", "tokend", "account", account], environment: keyring.childEnvironment,
            stdin: "/dev/null", stdout: scratch + ".out", stderr: scratch + ".err")
        let json = (try? String(contentsOfFile: scratch + ".out", encoding: .utf8)) ?? ""
        guard status == 0, !json.isEmpty else { return nil }
        return try TokenSet(keyringJSON: json)
    }

    func status(_ account: String = "work") throws -> AccountStatus {
        guard let status = try call(Request(op: "status", account: account)).accounts?.first else { throw HarnessError("no status for \(account)") }
        return status
    }
}

struct HarnessError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Polls `condition` until it holds or the deadline passes: how tests wait for events they
/// cannot subscribe to, instead of sleeping a guessed amount.
func poll(timeout: Double, interval: Double = 0.05, _ message: @autoclosure () -> String, _ condition: () throws -> Bool) async throws {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if try condition() { return }
        try await Task.sleep(for: .milliseconds(Int(interval * 1000)))
    }
    if try condition() { return }
    throw HarnessError("timed out after \(timeout) s: \(message())")
}
