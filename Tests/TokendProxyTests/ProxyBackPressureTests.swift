import Foundation
import Synchronization
import Testing
import TokendTestSupport
@testable import TokendProxy

/// The proxy never holds a body whole: when the side it writes to stops reading, it stops reading
/// from the other side. Shown by what the sending end can hand to the kernel while the receiving
/// end reads nothing: a body far larger than every buffer on the way stops going out below the
/// bound, and all of it arrives once the receiver reads.
///
/// Alone only (scripts/test runs it after the whole suite, with TOKEND_ALONE=1): the bodies are
/// twice this machine's TCP buffers (~88 MiB each way), and streaming them through the in-process
/// proxy held the test process's two cooperative threads for ~100 s inside the whole suite, where
/// 18 in-process tests then ran past their 60 s limits (stop 54's first whole run).
@Suite(.alone)
struct ProxyBackPressureTests {
    /// What the two hops may hold while the receiver reads nothing: the proxy's two sockets at
    /// this machine's largest TCP buffers (receive and send; the kernel grows them as the proxy
    /// reads), the test's own two, made small, and 8 MiB for the proxy's own (8 chunks of 64 KiB
    /// held, NIO's read and write buffers, async-http-client's pending write).
    static let bound = RawPeer.maximumBuffer("tcp_rmem") + RawPeer.maximumBuffer("tcp_wmem") + 2 * RawPeer.ownBuffer + (8 << 20)
    /// Twice the bound: a proxy that read on regardless would take it all.
    static let bodySize = 2 * bound

    @Test func aSlowUpstreamStopsTheProxyReadingTheUpload() async throws {
        let (listener, upstreamPort) = try LoopbackSocket.listen()
        defer { close(listener) }
        try await ProxyWorld.with(extraUpstreams: [ProxyUpstreamSettings(origin: ProxyOrigin(secure: false, host: "127.0.0.1", port: upstreamPort), account: "work")]) { world in
            let client = try LoopbackSocket.connect(port: world.proxyPort)
            defer { close(client) }
            RawPeer.shrink(client, SO_SNDBUF)
            try RawPeer.send(client, "POST http://127.0.0.1:\(upstreamPort)/up HTTP/1.1\r\nContent-Length: \(Self.bodySize)\r\nConnection: close\r\n\r\n")
            // The upstream takes the connection and reads nothing yet.
            let upstream = try await RawPeer.onThread { try RawPeer.accept(listener) }
            defer { close(upstream) }
            let sent = try await RawPeer.onThread { RawPeer.writeUntilQuiet(client, count: Self.bodySize) }
            #expect(sent < Self.bound, "the client handed \(sent) bytes of \(Self.bodySize) to a proxy whose upstream read none (bound \(Self.bound))")
            // The upstream reads: the rest goes through, every byte arrives.
            async let received = RawPeer.onThread { () throws -> Int in
                _ = try RawPeer.readHead(upstream)
                let total = RawPeer.drain(upstream, count: Self.bodySize)
                try RawPeer.send(upstream, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                return total
            }
            try await RawPeer.onThread { RawPeer.writeAll(client, count: Self.bodySize - sent) }
            #expect(try await received == Self.bodySize)
            let answer = try await RawPeer.onThread { try RawPeer.readHead(client) }
            #expect(answer.hasPrefix("HTTP/1.1 200 OK\r\n"), "\(answer)")
        }
    }

    @Test func aSlowClientStopsTheProxyReadingTheDownload() async throws {
        let (listener, upstreamPort) = try LoopbackSocket.listen()
        defer { close(listener) }
        try await ProxyWorld.with(extraUpstreams: [ProxyUpstreamSettings(origin: ProxyOrigin(secure: false, host: "127.0.0.1", port: upstreamPort), account: "work")]) { world in
            let client = try LoopbackSocket.connect(port: world.proxyPort)
            defer { close(client) }
            RawPeer.shrink(client, SO_RCVBUF)
            try RawPeer.send(client, "GET http://127.0.0.1:\(upstreamPort)/down HTTP/1.1\r\nConnection: close\r\n\r\n")
            let upstream = try await RawPeer.onThread { try RawPeer.accept(listener) }
            defer { close(upstream) }
            RawPeer.shrink(upstream, SO_SNDBUF)
            // The client reads nothing yet: the upstream can hand only so much to the proxy.
            let sent = try await RawPeer.onThread { () throws -> Int in
                _ = try RawPeer.readHead(upstream)
                try RawPeer.send(upstream, "HTTP/1.1 200 OK\r\nContent-Length: \(Self.bodySize)\r\n\r\n")
                return RawPeer.writeUntilQuiet(upstream, count: Self.bodySize)
            }
            #expect(sent < Self.bound, "the upstream handed \(sent) bytes of \(Self.bodySize) to a proxy whose client read none (bound \(Self.bound))")
            // The client reads: the rest goes through, every byte arrives.
            async let written: Void = RawPeer.onThread { RawPeer.writeAll(upstream, count: Self.bodySize - sent) }
            let received = try await RawPeer.onThread { () throws -> Int in
                let head = try RawPeer.readHead(client)
                return head.hasPrefix("HTTP/1.1 200 OK\r\n") ? RawPeer.drain(client, count: Self.bodySize) : -1
            }
            try await written
            #expect(received == Self.bodySize)
        }
    }
}

/// Blocking socket steps for one end of a connection, each on a thread of its own (off the
/// cooperative pool that the proxy's tasks need).
enum RawPeer {
    /// The test's own socket buffers: 64 KiB, so that the kernel's share of the bound is the
    /// proxy's sockets, not the test's.
    static let ownBuffer = 64 << 10
    /// How long the sending end waits for the kernel to take more before it counts the
    /// connection as stopped. A stopped proxy never takes more; a slow one that takes more later
    /// is only counted lower, which no bound can fail on.
    static let quietMilliseconds: Int32 = 1000

    /// The largest buffer `net.ipv4.NAME` lets TCP grow to (its third figure); 32 MiB if unreadable.
    static func maximumBuffer(_ name: String) -> Int {
        let text = (try? String(contentsOfFile: "/proc/sys/net/ipv4/\(name)", encoding: .utf8)) ?? ""
        let figure = text.split(whereSeparator: \.isWhitespace).last.flatMap { Int($0) }  // conversion: a failable parse of a String
        return min(figure ?? (32 << 20), 1 << 30)
    }

    static func shrink(_ fd: Int32, _ option: Int32) {
        var size = Int32(ownBuffer)  // conversion: a constant, 64 KiB
        setsockopt(fd, SOL_SOCKET, option, &size, socklen_t(MemoryLayout<Int32>.size))
    }

    static func onThread<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try work() }) }.start()
        }
    }

    /// The next connection, waiting at most `Patience.seconds` (SO_RCVTIMEO bounds accept too);
    /// the connection's reads are bounded so.
    static func accept(_ listener: Int32) throws -> Int32 {
        var timeout = timeval(tv_sec: Int(Patience.seconds), tv_usec: 0)  // conversion: a constant, 120
        setsockopt(listener, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let fd = Glibc.accept(listener, nil, nil)
        guard fd >= 0 else { throw POSIXError(.ECONNABORTED) }
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        return fd
    }

    static func send(_ fd: Int32, _ text: String) throws {
        let bytes = Array(text.utf8)
        guard bytes.withUnsafeBytes({ Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == bytes.count else { throw POSIXError(.EPIPE) }
    }

    /// Writes up to `count` bytes without blocking, until they are all out or the kernel takes
    /// none for `quietMilliseconds`; returns how many went out.
    static func writeUntilQuiet(_ fd: Int32, count: Int) -> Int {
        let chunk = [UInt8](repeating: 0x61, count: 64 << 10)
        var sent = 0
        while sent < count {
            let wrote = chunk.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, min($0.count, count - sent), Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
            if wrote > 0 {
                sent += wrote
                continue
            }
            guard wrote < 0, errno == EAGAIN || errno == EINTR else { return sent }
            var ready = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)  // conversion: a C constant
            if Glibc.poll(&ready, 1, quietMilliseconds) == 0 { return sent }
        }
        return sent
    }

    /// Writes `count` bytes, blocking.
    static func writeAll(_ fd: Int32, count: Int) {
        let chunk = [UInt8](repeating: 0x61, count: 64 << 10)
        var sent = 0
        while sent < count {
            let wrote = chunk.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, min($0.count, count - sent), Int32(MSG_NOSIGNAL)) }
            if wrote < 0, errno == EINTR { continue }
            guard wrote > 0 else { return }
            sent += wrote
        }
    }

    /// Reads an HTTP head, and nothing after it, from the socket.
    static func readHead(_ fd: Int32) throws -> String {
        var head: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while head.count < 64 << 10 {
            // Peeked first, so that only the head's bytes are taken.
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_PEEK)) }
            guard count > 0 else { throw POSIXError(.ECONNRESET) }
            let seen = head + buffer[0..<count]
            let end = seen.indices.dropLast(3).first { seen[$0...].starts(with: [13, 10, 13, 10]) }
            let take = end.map { $0 + 4 - head.count } ?? count
            _ = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, take, 0) }
            head += buffer[0..<take]
            if end != nil { return String(decoding: head, as: UTF8.self) }
        }
        throw POSIXError(.EMSGSIZE)
    }

    /// Reads and drops `count` bytes, or until the end of the stream; returns how many.
    static func drain(_ fd: Int32, count: Int) -> Int {
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        var read = 0
        while read < count {
            let got = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, min($0.count, count - read), 0) }
            if got < 0, errno == EINTR { continue }
            guard got > 0 else { return read }
            read += got
        }
        return read
    }
}
