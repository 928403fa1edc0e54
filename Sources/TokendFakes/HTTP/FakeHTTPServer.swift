import Foundation
import HummingbirdCore
import Logging
import NIOCore
import NIOPosix
import TokendSystem

/// A Hummingbird HTTP/1.1 server on its own event loop, for a fake: started on a port (0 picks a
/// free one, so parallel tests never collide) and stopped with every connection closed, including
/// ones a fake left hanging on purpose.
final class FakeHTTPServer: Sendable {
    typealias Responder = @Sendable (HummingbirdCore.Request, consuming ResponseWriter, any Channel) async throws -> Void

    let port: Int
    private let running: Task<Void, any Error>
    private let group: MultiThreadedEventLoopGroup
    private let executor: DedicatedThreadExecutor

    private init(port: Int, running: Task<Void, any Error>, group: MultiThreadedEventLoopGroup, executor: DedicatedThreadExecutor) {
        self.port = port
        self.running = running
        self.group = group
        self.executor = executor
    }

    /// Serves `routes` through the one connection layer (`FakeResponder`).
    static func start(host: String = "127.0.0.1", port: Int = 0, routes: any FakeRoutes) async throws -> FakeHTTPServer {
        let responder = FakeResponder(routes: routes)
        return try await start(host: host, port: port) { (request, writer: consuming ResponseWriter, channel) in
            try await responder.respond(to: request, writer: writer, channel: channel)
        }
    }

    static func start(host: String, port: Int, responder: @escaping Responder) async throws -> FakeHTTPServer {
        // One loop thread per fake: shutting it down closes whatever connections are left, without
        // bookkeeping of our own.
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        var logger = Logger(label: "fake-http-server")
        // Hummingbird logs closed connections; a fake closes them on purpose.
        logger.logLevel = .critical
        let (bound, boundSink) = AsyncStream.makeStream(of: Int?.self)
        let server = Server(
            childChannelSetup: HTTP1Channel(responder: responder),
            configuration: ServerConfiguration(address: .hostname(host, port: port), reuseAddress: true),
            onServerRunning: { channel in
                boundSink.yield(channel.localAddress?.port)
                boundSink.finish()
            },
            eventLoopGroup: group, logger: logger)
        // Exchanges run on a thread of the fake's own, not on Swift's cooperative pool: test code
        // that blocks the pool (two threads on two cores) must not hold up the fake's answers.
        // Hummingbird handles each connection in a child task, which inherits this preference.
        // Not the event loop itself as executor: that hung a parallel end-to-end run (every task
        // suspended, nothing runnable), for a reason not yet found.
        let executor = DedicatedThreadExecutor(name: "fake-http-server")
        let running = Task(executorPreference: executor) {
            do {
                try await server.run()
            } catch {
                boundSink.finish()
                throw error
            }
        }
        var ports = bound.makeAsyncIterator()
        guard let boundPort = await ports.next(), let boundPort else {
            running.cancel()
            let failure = await running.result
            executor.finish()
            try? await group.shutdownGracefully()
            if case .failure(let error) = failure { throw error }
            throw FakeFirebaseError.noLocalAddress(host: host)
        }
        return FakeHTTPServer(port: boundPort, running: running, group: group, executor: executor)
    }

    /// Stops listening and closes every connection: cancelling the server cancels every
    /// exchange in progress (hangs and trickles included).
    func shutdown() async throws {
        running.cancel()
        _ = await running.result
        executor.finish()
        try await group.shutdownGracefully()
    }
}

/// Runs tasks, one at a time, on a thread of its own, for `Task(executorPreference:)`. The thread
/// ends once `finish()` was called and the queue has drained.
final class DedicatedThreadExecutor: TaskExecutor, @unchecked Sendable {
    // @unchecked: `jobs` and `finished` are only touched under `condition`'s lock.
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private var finished = false

    init(name: String) {
        DedicatedThread.start(name) { [self] in run() }
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    func finish() {
        condition.lock()
        finished = true
        condition.signal()
        condition.unlock()
    }

    private func run() {
        while true {
            condition.lock()
            while jobs.isEmpty && !finished { condition.wait() }
            if jobs.isEmpty {
                condition.unlock()
                return
            }
            let job = jobs.removeFirst()
            condition.unlock()
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}
