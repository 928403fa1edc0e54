import Dispatch
import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import Testing
import TokendFakes
@testable import TokendServer
import TokendTestSupport

/// The harness's second mode (issue 47, item 3): the daemon `tokend`'s main builds
/// (`Daemon.build`, with the process-wide hardening left out, as `DaemonLifecycleTests` does)
/// runs inside the test process. Its HTTP goes through the fake's in-process exchange
/// (`HTTPTransport(exchange:)`, `FakeFirebase.start(serving: .inProcess)`): no socket to the
/// fake. Its socket, configuration, token files and log are the real ones, and the real
/// `tokenctl` talks to it over that socket.
///
/// Its keyring is an in-memory store, not gnome-keyring: libsecret binds to one session bus per
/// process and keys an item by account name alone, so in-process worlds would share one keyring
/// with each other and with `LibsecretStoreTests`, which locks and restarts it (a world's write
/// timed out under one of those restarts). The `.process` runs of the same cases keep the real
/// keyring. kill -9 and signals would hit the test process: those stay with `.process` too.
extension DaemonHarness {
    enum Mode: String, Sendable, CaseIterable, CustomTestStringConvertible {
        case process, inProcess
        var testDescription: String { rawValue }
    }

    /// One running in-process daemon: its service group and the log file it writes.
    final class InProcessDaemon: Sendable {
        let group: ServiceGroup
        let log: Int32
        /// How the group's run ended (its error, or "stopped"); nil while it runs.
        let ended = Mutex<String?>(nil)
        private let finished = DispatchSemaphore(value: 0)

        init(group: ServiceGroup, log: Int32) {
            self.group = group
            self.log = log
            Task { [self] in
                do {
                    try await group.run()
                    ended.withLock { $0 = "stopped" }
                } catch {
                    ended.withLock { $0 = "\(error)" }
                }
                finished.signal()
            }
        }

        /// Graceful shutdown, as SIGTERM asks of tokend's main, and the wait until the group has
        /// stopped: blocks the calling thread, so it runs off the cooperative pool.
        func stop() {
            Task { await group.triggerGracefulShutdown() }
            finished.wait()
            close(log)
        }
    }

    /// An in-process world: its own directory for socket, configuration and log; the process's
    /// private session only for the environment tokenctl runs in (nothing writes to its keyring).
    static func startInProcess(options: FakeFirebase.Options, accounts: [String], startDaemon: Bool) async throws -> DaemonHarness {
        let keyring = try await offPool { try PrivateKeyring.sharedForThisProcess() }
        let root = try TemporaryDirectory(prefix: "tokend-inproc", in: "/tmp").url
        let fake: FakeFirebase
        do {
            fake = try await FakeFirebase.start(serving: .inProcess, options: options)
        } catch {
            try? FileManager.default.removeItem(at: root)
            throw error
        }
        let harness = DaemonHarness(keyring: keyring, fake: fake, mode: .inProcess, root: root)
        return try await harness.readied(accounts: accounts, startDaemon: startDaemon)
    }

    func startInProcessDaemon(extraEnvironment: [String: String]) async throws {
        try FileManager.default.createDirectory(atPath: URL(fileURLWithPath: socketPath).deletingLastPathComponent().path, withIntermediateDirectories: true)
        let log = open(logPath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard log >= 0 else { throw HarnessError("cannot open \(logPath): errno \(errno)") }
        // As tokend's main logs on a terminal: info and up, no journal prefixes.
        let logger = Logger(label: "tokend") { JournaldLogHandler(label: $0, level: .info, prefixed: false, descriptor: log) }
        let options = DaemonOptions(socketPath: socketPath, configPath: configPath, environment: environment.merging(extraEnvironment) { $1 })
        let daemon: Daemon
        do {
            daemon = try Daemon.build(
                options, logger: logger, parts: DaemonParts(transport: fake.transport(), store: inProcessStore), hardensProcess: false, lifecycle: { _ in })
        } catch {
            close(log)
            throw HarnessError("tokend did not build: \(error.description)")
        }
        let running = InProcessDaemon(group: ServiceGroup(configuration: .init(services: [daemon], logger: logger)), log: log)
        inProcessDaemon.withLock { $0 = running }
        try await poll(timeout: Self.startTimeout, "tokend did not answer on \(socketPath); log:\n\(daemonLog)") {
            if let end = running.ended.withLock({ $0 }) { throw HarnessError("tokend ended (\(end)); log:\n\(self.daemonLog)") }
            return (try? await self.call(.hello)) != nil
        }
    }

    /// `stopDaemon` in-process: blocks until the daemon has stopped (`InProcessDaemon.stop`).
    func stopInProcessDaemon() -> Int32? {
        guard let running = inProcessDaemon.withLock({ $0.take() }) else { return nil }
        running.stop()
        return 0
    }

    /// The end of an in-process world: its directory goes; the process's session stays.
    func finishInProcess() {
        try? FileManager.default.removeItem(at: URL(fileURLWithPath: logPath).deletingLastPathComponent())
    }

    /// False, with the test failed, where only a spawned tokend can do `what`.
    func requireProcess(_ what: String) -> Bool {
        guard mode == .inProcess else { return true }
        Issue.record("\(what) needs a tokend of its own process (DaemonHarness.Mode.process)")
        return false
    }
}
