import HummingbirdCore
import Logging
import NIOCore
import NIOPosix

/// A Hummingbird HTTP/1.1 server on its own event loop, for a fake: started on a port (0 picks a
/// free one, so parallel tests never collide) and stopped with every connection closed, including
/// ones a fake left hanging on purpose.
final class FakeHTTPServer: Sendable {
    typealias Responder = @Sendable (HummingbirdCore.Request, consuming ResponseWriter, any Channel) async throws -> Void

    let port: Int
    private let running: Task<Void, any Error>
    private let group: MultiThreadedEventLoopGroup

    private init(port: Int, running: Task<Void, any Error>, group: MultiThreadedEventLoopGroup) {
        self.port = port
        self.running = running
        self.group = group
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
        let running = Task {
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
            try? await group.shutdownGracefully()
            if case .failure(let error) = failure { throw error }
            throw FakeFirebaseError.noLocalAddress(host: host)
        }
        return FakeHTTPServer(port: boundPort, running: running, group: group)
    }

    /// Stops listening and closes every connection: cancelling the server cancels every
    /// exchange in progress (hangs and trickles included).
    func shutdown() async throws {
        running.cancel()
        _ = await running.result
        try await group.shutdownGracefully()
    }
}
