import Foundation
import Logging
import Synchronization
import Testing
import TokendCore
import TokendProtocol
@testable import TokendServer
import TokendTestSupport

/// The listener tells the daemon's idle release of work on open connections too, not only of new
/// ones: a long burst on persistent connections is handed back like one on new connections.
@Suite struct AcceptLoopWorkTests {
    @Test func everyReadOnAnOpenConnectionCountsAsWork() async throws {
        let directory = try TemporaryDirectory()
        defer { try? directory.remove() }
        let path = directory.appending("tokend.sock")
        let work = Atomic<Int>(0)
        let listener = SocketListener(
            handler: StubbedHandler().handler, logger: Logger(label: "tokend-test") { _ in SwiftLogNoOpLogHandler() },
            onConnection: { work.wrappingAdd(1, ordering: .relaxed) })
        let listening = Task { try await listener.run(path: path, activatedDescriptor: nil) }
        defer { listener.stop() }
        try await poll("the socket is there") { FileManager.default.fileExists(atPath: path) }
        // Three lines on one connection, each sent once the one before is answered: three reads.
        let client = try BlockingClient(path: path)
        var replies: [Response] = []
        for id in 1...3 {
            try client.send(.hello, id: .number(Double(id)))
            replies.append(try client.receive())
        }
        #expect(replies.map(\.ok) == [true, true, true])
        #expect(work.load(ordering: .relaxed) >= 4, "the connection, then each of its three lines")
        listener.stop()
        try await listening.value
    }
}
