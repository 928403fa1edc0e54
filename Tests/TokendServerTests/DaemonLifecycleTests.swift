import Dispatch
import Foundation
import Logging
import ServiceLifecycle
import Testing
import TokendKeyring
import TokendProtocol
import TokendProviders
@testable import TokendServer
import TokendSystem
import TokendTestClock
import TokendTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// The daemon's pieces as one service group: graceful shutdown stops them one after another,
/// the socket first and the engine last, and a connection open at the time is closed. Each daemon
/// is made by `Daemon.build`, as `tokend`'s main makes it, with the test's parts.
@Suite struct DaemonLifecycleTests {
    static let quiet = Logger(label: "tokend-test") { _ in SwiftLogNoOpLogHandler() }

    /// A manual clock as clock and timers, a transport and an in-memory store on it.
    static func testParts() -> (DaemonParts, ManualClock) {
        let clock = ManualClock()
        let parts = DaemonParts(
            clock: clock, timers: clock, transport: HTTPTransport(environment: [:], clock: clock, timers: clock),
            store: InMemorySecretStore(timeout: 1, clock: clock, timers: clock))
        return (parts, clock)
    }

    @Test func buildPutsTheTestsPartsInPlace() async throws {
        let (parts, clock) = Self.testParts()
        let given = try #require(parts.transport)
        let daemon = try Daemon.build(
            DaemonOptions(socketPath: "/nonexistent/tokend.sock", environment: [:]), logger: Self.quiet, parts: parts, hardensProcess: false, lifecycle: { _ in })
        #expect(daemon.engine.clock as AnyObject === clock)
        #expect(daemon.engine.timers as AnyObject === clock)
        #expect(daemon.transport === given)
        #expect(daemon.store as AnyObject === parts.store as AnyObject)
        #expect(!daemon.hardensProcess)
        await daemon.transport.shutdown()

        // Without parts, the real ones (the store aside: a test does not open the user's keyring).
        let real = try Daemon.build(
            DaemonOptions(socketPath: "/nonexistent/tokend.sock", environment: [:]), logger: Self.quiet,
            parts: DaemonParts(store: InMemorySecretStore()))
        #expect(real.engine.clock is ForwardClock)
        #expect(real.engine.timers is SystemTimerSource)
        #expect(real.transport.clock is SystemWallClock)
        #expect(real.hardensProcess)
        await real.transport.shutdown()
    }

    /// What the test sees, in the order it sees it.
    enum Seen: Sendable, Equatable {
        case step(LifecycleStep)
        case watching, watchEnded
    }

    @Test func gracefulShutdownStopsThePiecesInOrderAndClosesOpenConnections() async throws {
        let directory = try TemporaryDirectory(prefix: "tokend-lifecycle")
        defer { try? directory.remove() }
        let socket = directory.appending("tokend.sock")
        let config = directory.appending("config.toml")
        #expect(FileManager.default.createFile(atPath: config, contents: Data()))
        let (seen, see) = AsyncStream.makeStream(of: Seen.self)
        // A watchdog an hour apart: present in the group, never due during the test.
        let environment = ["WATCHDOG_USEC": "3600000000", "WATCHDOG_PID": "\(getpid())"]
        // On the manual clock no timer fires unless the test advances it: the watchdog's wait and
        // the idle release stay armed until the shutdown cancels them.
        let (parts, _) = Self.testParts()
        let daemon = try Daemon.build(
            DaemonOptions(socketPath: socket, configPath: config, environment: environment, keyringTimeout: 1), logger: Self.quiet,
            parts: parts, hardensProcess: false, lifecycle: { _ = see.yield(.step($0)) })
        let group = ServiceGroup(configuration: .init(services: [daemon], logger: Self.quiet))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            var events = seen.makeAsyncIterator()
            #expect(await events.next() == .step(.ready))
            // A client with a `watch` open, on a thread of its own (the client blocks).
            DispatchQueue.global().async {
                guard let client = try? BlockingClient(path: socket), (try? client.send(.watch(WatchArgs()), id: nil)) != nil,
                    (try? client.receive(Response.self))?.ok == true
                else {
                    see.yield(.watchEnded)
                    return
                }
                see.yield(.watching)
                while (try? client.receiveLine()) != nil {}
                see.yield(.watchEnded)
            }
            #expect(await events.next() == .watching)
            await group.triggerGracefulShutdown()
            var order: [Seen] = []
            while order.count < 9, let event = await events.next() { order.append(event) }
            try await tasks.waitForAll()
            let steps: [LifecycleStep] = order.compactMap { if case .step(let step) = $0 { step } else { nil } }
            #expect(steps == [.stoppedAccepting, .requestsReleased, .connectionsClosed, .reloadsStopped, .watchdogStopped, .statusLineStopped, .hooksStopped, .engineStopped])
            #expect(order.contains(.watchEnded), "the open watch was closed by the shutdown")
            #expect(access(socket, F_OK) != 0, "the socket file is removed")
        }
    }
}
