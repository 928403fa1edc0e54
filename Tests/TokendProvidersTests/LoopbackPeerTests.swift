import Foundation
import NIOCore
import Testing
@testable import TokendProviders

/// The owner of a loopback connection's other end, from the kernel: what lets the redirect
/// listener refuse other users' connections.
@Suite struct LoopbackPeerTests {
    @Test func theOwnerOfALoopbackPeerIsFoundBothWays() throws {
        let server = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)  // conversion: a C constant
        defer { close(server) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        try #require(withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(server, $0, length) } } == 0)
        try #require(listen(server, 4) == 0)
        try #require(withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(server, $0, &length) } } == 0)
        let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(client) }
        try #require(withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(client, $0, length) } } == 0)
        var clientAddress = sockaddr_in()
        try #require(withUnsafeMutablePointer(to: &clientAddress) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(client, $0, &length) } } == 0)
        let peer = SocketAddress(clientAddress, host: "127.0.0.1")
        let local = SocketAddress(address, host: "127.0.0.1")
        #expect(LoopbackPeer.owner(peer: peer, local: local) == geteuid(), "sock_diag")
        let table = try String(contentsOfFile: "/proc/net/tcp", encoding: .utf8)
        #expect(LoopbackPeer.owner(in: table, local: try #require(LoopbackPeer.key(peer)), remote: try #require(LoopbackPeer.key(local))) == geteuid(), "/proc/net/tcp")
        // A port nobody is connected from has no owner: refused, not guessed.
        var stranger = clientAddress
        stranger.sin_port = 1
        #expect(LoopbackPeer.owner(peer: SocketAddress(stranger, host: "127.0.0.1"), local: local) == nil)
    }
}

/// The redirect listener's limits, on its own: a cap on open connections, and every accepted
/// connection closed with the listener. Before, 2,000 held connections stayed open for good
/// after the login ended.
@Suite struct LoopbackRedirectListenerLimitTests {
    @Test func connectionsBeyondTheCapAreClosedAndTheRestCloseWithTheListener() async throws {
        // A deadline far beyond the test, so only the cap and close() can close anything.
        let listener = try await LoopbackRedirectListener.start(state: "s", deadline: .seconds(600))
        let count = LoopbackRedirectListener.maximumConnections + 14
        let sockets = try (0..<count).map { _ in try Self.connect(port: listener.port) }
        defer { for fd in sockets { close(fd) } }
        // The extra ones are closed unread; the admitted ones stay open.
        let closedEarly = try await Self.waitForEOF(sockets, atLeast: count - LoopbackRedirectListener.maximumConnections)
        #expect(closedEarly.count == count - LoopbackRedirectListener.maximumConnections, "\(closedEarly.count) closed of \(count)")
        await listener.close()
        let closedAll = try await Self.waitForEOF(sockets, atLeast: count)
        #expect(closedAll.count == count, "after close(): \(closedAll.count) of \(count) closed")
    }

    /// Connected, non-blocking TCP sockets to 127.0.0.1:`port`.
    static func connect(port: Int) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Foundation.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard connected == 0 else { throw POSIXError(.ECONNREFUSED) }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        return fd
    }

    /// Polls (20 s at most) until at least `atLeast` of `sockets` read EOF; those that did.
    static func waitForEOF(_ sockets: [Int32], atLeast: Int) async throws -> Set<Int32> {
        var closed: Set<Int32> = []
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            for fd in sockets where !closed.contains(fd) {
                var byte: UInt8 = 0
                let got = read(fd, &byte, 1)
                if got == 0 || (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK) { closed.insert(fd) }
            }
            if closed.count >= atLeast { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        // A moment more for a wrong extra close to show up (it would fail the count check).
        try await Task.sleep(for: .milliseconds(200))
        for fd in sockets where !closed.contains(fd) {
            var byte: UInt8 = 0
            let got = read(fd, &byte, 1)
            if got == 0 || (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK) { closed.insert(fd) }
        }
        return closed
    }
}
