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
