import Foundation
import NIOCore
import Testing
import TokendTestSupport
@testable import TokendProviders

/// The owner of a loopback connection's other end, from the kernel: what lets the redirect
/// listener refuse other users' connections.
@Suite struct LoopbackPeerTests {
    @Test func theOwnerOfALoopbackPeerIsFoundBothWays() throws {
        let (server, address) = try Self.listener()
        defer { close(server) }
        let (client, clientAddress) = try Self.client(of: address)
        defer { close(client) }
        let peer = SocketAddress(clientAddress, host: "127.0.0.1")
        let local = SocketAddress(address, host: "127.0.0.1")
        #expect(LoopbackPeer.owner(peer: peer, local: local) == geteuid(), "sock_diag")
        // The fallback reads /proc/net/tcp to its end. The kernel resumes a read by row number,
        // so a row can still be skipped while other tests' sockets come and go: read until the
        // row shows, for up to 20 s (what is checked is the reading and the row's format).
        let peerKey = try #require(LoopbackPeer.key(peer)), localKey = try #require(LoopbackPeer.key(local))
        var owner: uid_t?
        let deadline = Date().addingTimeInterval(20)
        while owner == nil, Date() < deadline {
            owner = LoopbackPeer.owner(in: try #require(LoopbackPeer.readTable("/proc/net/tcp")), local: peerKey, remote: localKey)
        }
        #expect(owner == geteuid(), "/proc/net/tcp")
        // A line of the table for a socket its process closed (inode 0): uid 0 there means unknown.
        let closedRow = "   1: \(peerKey) \(localKey) 06 00000000:00000000 03:00000DC4 00000000     0        0 0 3 0000000000000000"
        #expect(LoopbackPeer.owner(in: "header\n" + closedRow, local: peerKey, remote: localKey) == nil)
        // A port nobody is connected from has no owner: refused, not guessed.
        var stranger = clientAddress
        stranger.sin_port = 1
        #expect(LoopbackPeer.owner(peer: SocketAddress(stranger, host: "127.0.0.1"), local: local) == nil)
    }
}

extension LoopbackPeerTests {
    /// IPv6 addresses as /proc/net/tcp6 prints them (the proxy may listen on [::1]): four 32-bit
    /// words, each in host order; the port big-endian. `::1` is the row `ss` and the kernel show.
    @Test func anIPv6AddressIsKeyedAsTcp6PrintsIt() throws {
        #expect(LoopbackPeer.key(try SocketAddress(ipAddress: "::1", port: 8080)) == "00000000000000000000000001000000:1F90")
        #expect(LoopbackPeer.key(try SocketAddress(ipAddress: "2001:db8::1:2", port: 443)) == "B80D0120000000000000000002000100:01BB")
        #expect(LoopbackPeer.key(try SocketAddress(ipAddress: "127.0.0.1", port: 8080)) == "0100007F:1F90")
    }

    /// The table read to its end, past the first page: with 200 sockets open, the row of the
    /// last one is found. Before, Foundation's read stopped after 27 rows.
    @Test func theWholeTableIsRead() throws {
        let (server, address) = try Self.listener(backlog: 256)
        defer { close(server) }
        var clients: [Int32] = []
        defer { for fd in clients { close(fd) } }
        for _ in 0..<100 { clients.append(try Self.client(of: address).fd) }
        let table = try #require(LoopbackPeer.readTable("/proc/net/tcp"))
        let rows = table.split(separator: "\n").count - 1
        #expect(rows >= 200, "\(rows) rows read; 100 connections are 200 sockets")
    }

    /// A peer that wrote and closed: its socket lingers (FIN_WAIT2, then TIME_WAIT) with no
    /// process behind it, and the kernel reports uid 0 for it. Unknown, so refused — before, a
    /// tokend running as root took such a forged redirect for its own (uid 0).
    @Test func aPeerThatClosedItsSocketHasNoOwner() async throws {
        let (server, address) = try Self.listener()
        defer { close(server) }
        let (client, clientAddress) = try Self.client(of: address)
        let accepted = accept(server, nil, nil)
        defer { close(accepted) }
        let peer = SocketAddress(clientAddress, host: "127.0.0.1")
        let local = SocketAddress(address, host: "127.0.0.1")
        #expect(LoopbackPeer.owner(peer: peer, local: local) == geteuid(), "while the peer holds its socket")
        close(client)
        // The accepted end stays open: the closed one waits in FIN_WAIT2 with no process.
        let deadline = Date().addingTimeInterval(10)
        var owner = LoopbackPeer.owner(peer: peer, local: local)
        while owner != nil, Date() < deadline {
            try await Task.sleep(for: .milliseconds(20))  // polling the kernel's table, with a deadline
            owner = LoopbackPeer.owner(peer: peer, local: local)
        }
        #expect(owner == nil, "a closed peer socket read as owned by uid \(owner.map(String.init) ?? "nil")")
    }
}

extension LoopbackPeerTests {
    /// A socket listening on 127.0.0.1, on a port the kernel picked, and its address.
    static func listener(backlog: Int32 = 4) throws -> (fd: Int32, address: sockaddr_in) {
        let (fd, _) = try LoopbackSocket.listen(backlog: backlog)
        return (fd, try LoopbackSocket.localAddress(of: fd))
    }

    /// A client connected to `address`, and its own address.
    static func client(of address: sockaddr_in) throws -> (fd: Int32, address: sockaddr_in) {
        let fd = try LoopbackSocket.connect(port: Int(UInt16(bigEndian: address.sin_port)))
        return (fd, try LoopbackSocket.localAddress(of: fd))
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
        let sockets = try (0..<count).map { _ in try LoopbackSocket.connect(port: listener.port, nonBlocking: true) }
        defer { for fd in sockets { close(fd) } }
        // The extra ones are closed unread; the admitted ones stay open.
        let closedEarly = try await Self.waitForEOF(sockets, atLeast: count - LoopbackRedirectListener.maximumConnections)
        #expect(closedEarly.count == count - LoopbackRedirectListener.maximumConnections, "\(closedEarly.count) closed of \(count)")
        await listener.close()
        let closedAll = try await Self.waitForEOF(sockets, atLeast: count)
        #expect(closedAll.count == count, "after close(): \(closedAll.count) of \(count) closed")
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
