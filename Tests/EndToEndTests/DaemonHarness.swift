import Foundation
import Synchronization
import TokendCore
import TokendProtocol
import TokendFakes
import TokendTestSupport

/// One end-to-end world: a private bus and gnome-keyring, the fake Firebase project, and tokend
/// talking to both, driven with the real `tokenctl` over tokend's real socket. `mode` says how
/// tokend runs: the real binary against the fake on 127.0.0.1 (`.process`), or the daemon
/// `Daemon.build` makes, inside the test process, its HTTP through the fake's in-process hook
/// (`.inProcess`, DaemonHarness+InProcess.swift).
/// Accessed from one test at a time, so a lock-free class is enough.
final class DaemonHarness: @unchecked Sendable {  // one test owns it; the locks guard the daemon handles
    let mode: Mode
    let keyring: PrivateKeyring
    let fake: FakeFirebase
    let socketPath: String
    let configPath: String
    let logPath: String
    private let daemon = Mutex<pid_t?>(nil)  // the running tokend; nil once reaped
    /// The daemon running in this process (`.inProcess`); nil when none runs.
    let inProcessDaemon = Mutex<InProcessDaemon?>(nil)
    /// The in-process daemon's keyring (`.inProcess`), which outlives its restarts.
    let inProcessStore: InMemorySecretStore?

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

    /// `root`: the world's own directory (socket, configuration, log); the keyring's in `.process`.
    init(keyring: PrivateKeyring, fake: FakeFirebase, mode: Mode = .process, root: URL? = nil) {
        self.mode = mode
        inProcessStore = mode == .inProcess ? InMemorySecretStore() : nil
        self.keyring = keyring
        self.fake = fake
        let root = root ?? keyring.root
        socketPath = root.appendingPathComponent("run/tokend/tokend.sock").path
        configPath = root.appendingPathComponent("home/.config/tokend/config.toml").path
        logPath = root.appendingPathComponent("tokend.log").path
    }

    /// A world with one Firebase account `work` pointing at a fresh fake. Prefer `withWorld`,
    /// which also tears it down; whoever calls this owns `shutdown()`.
    static func start(
        options: FakeFirebase.Options = .init(), accounts: [String] = ["work"], startDaemon: Bool = true, mode: Mode = .process
    ) async throws -> DaemonHarness {
        if mode == .inProcess { return try await startInProcess(options: options, accounts: accounts, startDaemon: startDaemon) }
        // Starting and stopping a keyring waits on processes: off the cooperative pool, which
        // other tests' daemons and in-process fakes need meanwhile.
        let keyring = try await offPool { try PrivateKeyring.start() }
        let fake: FakeFirebase
        do {
            fake = try await FakeFirebase.start(options: options)
        } catch {
            _ = try? await offPool { keyring.stop() }
            throw error
        }
        let harness = DaemonHarness(keyring: keyring, fake: fake)
        return try await harness.readied(accounts: accounts, startDaemon: startDaemon)
    }

    /// The world with `accounts` configured and, if asked, its daemon answering; shut down if
    /// either fails.
    func readied(accounts: [String], startDaemon: Bool) async throws -> DaemonHarness {
        do {
            try writeConfig(accounts.map { firebaseAccount($0) }.joined(separator: "\n"))
            if startDaemon { try await self.startDaemon() }
        } catch {
            await shutdown()
            throw error
        }
        return self
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
        if mode == .inProcess {
            // The token files' directory is the world's, not the keyring's that worlds share.
            environment["XDG_RUNTIME_DIR"] = URL(fileURLWithPath: socketPath).deletingLastPathComponent().deletingLastPathComponent().path
        }
        return environment
    }

    /// Starts tokend (stdout and stderr appended to `logPath`) and waits until it answers `hello`.
    /// In-process, `arguments` and `launcher` must be empty: there is no command line.
    func startDaemon(extraEnvironment: [String: String] = [:], arguments: [String] = [], launcher: [String] = []) async throws {
        if mode == .inProcess {
            guard arguments.isEmpty, launcher.isEmpty else { throw HarnessError("an in-process tokend has no command line: \(arguments) \(launcher)") }
            return try await startInProcessDaemon(extraEnvironment: extraEnvironment)
        }
        let tokend = Self.binDirectory + "/tokend"
        let (path, argv) = launcher.isEmpty ? (tokend, arguments) : (launcher[0], Array(launcher.dropFirst()) + [tokend] + arguments)
        _ = reapDaemonsAtExit
        let pid = try ChildProcess.start(path, argv, environment: environment.merging(extraEnvironment) { $1 }, output: logPath)
        daemon.withLock { $0 = pid }
        spawnedDaemons.withLock { _ = $0.insert(pid) }
        try await poll(timeout: Self.startTimeout, "tokend did not answer on \(socketPath); log:\n\(daemonLog)") {
            if let status = ChildProcess.exitStatusIfEnded(pid) {
                self.forget(pid)
                throw HarnessError("tokend exited with \(status); log:\n\(self.daemonLog)")
            }
            return (try? await self.call(.hello)) != nil
        }
    }

    var daemonPID: Int32? { daemon.withLock { $0 } }

    func kill9() {
        guard requireProcess("kill -9"), let pid = daemon.withLock({ $0 }) else { return }
        ChildProcess.stop(pid)
        forget(pid)
    }

    /// SIGTERM and wait (SIGKILL past `ChildProcess.defaultTimeout`); returns the exit status,
    /// nil when no daemon was running.
    /// In-process: a graceful shutdown, waited for (so, as here, off the cooperative pool), 0.
    @discardableResult
    func stopDaemon() -> Int32? {
        if mode == .inProcess { return stopInProcessDaemon() }
        guard let pid = daemon.withLock({ $0 }) else { return nil }
        defer { forget(pid) }
        if ChildProcess.exitStatusIfEnded(pid) != nil { return nil }
        return try? ChildProcess.terminate(pid)
    }

    /// The daemon `pid` is reaped: nothing left to signal or to kill at exit.
    private func forget(_ pid: pid_t) {
        daemon.withLock { if $0 == pid { $0 = nil } }
        spawnedDaemons.withLock { _ = $0.remove(pid) }
    }

    func signalDaemon(_ signal: Int32) {
        if requireProcess("a signal"), let pid = daemonPID { kill(pid, signal) }
    }

    /// Stops the daemon (waited for off the cooperative pool), the fake and the keyring.
    func shutdown() async {
        _ = try? await offPool { self.stopDaemon() }
        try? await fake.shutdown()
        if mode == .inProcess { return finishInProcess() }
        _ = try? await offPool { self.keyring.stop() }
    }

    var daemonLog: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    // MARK: clients

    func call(_ command: Command, id: RequestID? = nil, timeout: Double = 30) async throws -> Response {
        let socketPath = self.socketPath
        return try await offPool {
            let client = try BlockingClient(path: socketPath)
            client.setReadTimeout(seconds: timeout)
            return try client.call(command, id: id)
        }
    }

    struct Run: Sendable {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    /// Runs the real tokenctl against this daemon, its output captured through files.
    func tokenctl(_ arguments: [String], stdin: String? = nil) async throws -> Run {
        try await offPool { try self.tokenctlBlocking(arguments, stdin: stdin) }
    }

    private func tokenctlBlocking(_ arguments: [String], stdin: String?) throws -> Run {
        let result = try ChildProcess.run(Self.binDirectory + "/tokenctl", arguments, environment: environment, stdin: stdin)
        return Run(status: result.status, stdout: result.stdout, stderr: result.stderr)
    }

    /// A user at the fake, imported into `account` with `tokenctl import` (token on stdin).
    @discardableResult
    func importNewUser(into account: String = "work") async throws -> FakeFirebase.Session {
        let session = fake.createUser()
        let run = try await tokenctl(["import", account], stdin: session.refreshToken + "\n")
        guard run.status == 0 else { throw HarnessError("import failed (\(run.status)): \(run.stderr)") }
        return session
    }

    /// The account's keyring item as `secret-tool` sees it (spawned like tokenctl: no pipes).
    /// In-process, what the daemon's in-memory store holds.
    func storedSession(_ account: String = "work") async throws -> TokenSet? {
        if let inProcessStore { return try await inProcessStore.load(account: account).get() }
        return try await offPool { try self.storedSessionBlocking(account) }
    }

    /// Waits until the account's keyring item is gone. A refresh or import the provider refuses
    /// for good answers as soon as the session has ended in memory; the item is deleted after
    /// that, on the keyring's time (AccountTransitions' `loggedOut`): reading it once, right
    /// after the answer, races that delete.
    func storedSessionDeleted(_ message: String, account: String = "work") async throws {
        try await poll(message) { try await self.storedSession(account) == nil }
    }

    private func storedSessionBlocking(_ account: String) throws -> TokenSet? {
        let result = try ChildProcess.run(
            "/usr/bin/secret-tool", ["lookup", "application", "tokend", "account", account], environment: keyring.childEnvironment)
        guard result.status == 0, !result.stdout.isEmpty else { return nil }
        return try TokenSet(keyringJSON: result.stdout)
    }

    func status(_ account: String = "work") async throws -> AccountStatus {
        guard let status = try await call(.status(StatusArgs(account: account))).accounts?.first else { throw HarnessError("no status for \(account)") }
        return status
    }
}

/// A world (see `DaemonHarness.start`) for the length of `body`, torn down before this returns,
/// however `body` ends.
func withWorld<T>(
    options: FakeFirebase.Options = .init(), accounts: [String] = ["work"], startDaemon: Bool = true, mode: DaemonHarness.Mode = .process,
    _ body: (DaemonHarness) async throws -> T
) async throws -> T {
    let world = try await DaemonHarness.start(options: options, accounts: accounts, startDaemon: startDaemon, mode: mode)
    return try await withTearDown(world, tearDown: { await $0.shutdown() }, body)
}

/// Runs blocking work (waitpid, socket reads) on a thread of its own. Swift's cooperative pool
/// has one thread per core — two here — and parallel tests blocking it starve everything else,
/// background tasks of the same test included.
func offPool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try work() }) }.start()
    }
}

/// Every tokend a harness started and has not stopped. A test that fails or ends without
/// awaiting `shutdown()` must not leave its daemon running after the test process exits.
let spawnedDaemons = Mutex<Set<pid_t>>([])

/// Installed once: SIGKILLs whatever is left in `spawnedDaemons` when the test process exits.
let reapDaemonsAtExit: Void = {
    atexit {
        for pid in spawnedDaemons.withLock({ $0 }) { kill(pid, SIGKILL) }
    }
}()

struct HarnessError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// TokendTestSupport's `poll`, named here so that it wins over Glibc's `poll(2)` in this module.
func poll(timeout: Double = Patience.seconds, interval: Double = 0.05, _ message: @autoclosure () -> String, _ condition: () async throws -> Bool) async throws {
    try await TokendTestSupport.poll(timeout: timeout, interval: interval, message(), condition)
}

/// One blocking connection driven from async test code: each call runs off the cooperative pool.
/// `@unchecked Sendable`: tests make one call at a time on it, each awaited before the next.
final class SharedClient: @unchecked Sendable {
    let connection: BlockingClient

    init(_ connection: BlockingClient) {
        self.connection = connection
    }

    func call(_ command: Command, id: RequestID? = nil) async throws -> Response {
        try await offPool { try self.connection.call(command, id: id) }
    }
}
