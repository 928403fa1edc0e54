import FoundationEssentials
import CTokendShims
import NIOCore
#if canImport(Glibc)
import Glibc
#endif

/// Who owns the other end of a loopback TCP connection. Unlike a Unix socket, TCP carries no
/// peer credentials, but on loopback both ends are sockets of this machine's kernel, which lists
/// each with its owner's uid in /proc/net/tcp (and tcp6). The peer's socket is the one whose local
/// address is our remote address and whose remote address is our local one. Public for the
/// proxy's loopback listener (TokendProxy), which serves only its own user's processes too.
public enum LoopbackPeer {
    /// The owner's uid, or nil when no such socket is listed (it closed, or it is not on this
    /// machine): callers refuse a connection whose owner is unknown.
    public static func owner(peer: SocketAddress, local: SocketAddress) -> uid_t? {
        // The kernel's exact lookup first; /proc/net/tcp (a table read in pieces, which can miss
        // a row while sockets come and go) only where sock_diag is not allowed.
        if case .v4(let peerV4) = peer, case .v4(let localV4) = local {
            var uid: uid_t = 0
            let peerIn = peerV4.address, localIn = localV4.address
            if tokend_tcp4_socket_owner(peerIn.sin_addr.s_addr, peerIn.sin_port, localIn.sin_addr.s_addr, localIn.sin_port, &uid) == 0 { return uid }
            if errno == ENOENT { return nil }
        }
        guard let peerKey = key(peer), let localKey = key(local) else { return nil }
        // The table is read in pieces; a row can be skipped while other sockets come and go,
        // so a miss is read again (a few times: the connection itself stays until answered).
        for _ in 0..<3 {
            for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
                guard let text = readTable(table) else { continue }
                if let uid = owner(in: text, local: peerKey, remote: localKey) { return uid }
            }
        }
        return nil
    }

    /// The most of a socket table read: 150 bytes a row, over 100,000 sockets.
    static let maximumTableSize = 16 << 20

    /// A /proc table read to its end. Foundation's `String(contentsOfFile:)` stops after the
    /// first page of a file whose size reads 0 (27 rows of /proc/net/tcp; seen here with 205),
    /// so the rows of a busy machine's later sockets were never seen.
    static func readTable(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        while bytes.count < maximumTableSize {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { return count == 0 ? String(decoding: bytes, as: UTF8.self) : nil }
            bytes.append(contentsOf: chunk.prefix(count))
        }
        return nil
    }

    /// The `uid` column of the row whose local and remote addresses are `local` and `remote`
    /// (`HEXADDRESS:HEXPORT`, as the kernel prints them).
    static func owner(in table: String, local: String, remote: String) -> uid_t? {
        for line in table.split(separator: "\n").dropFirst() {
            // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid …
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count > 9, fields[1] == local, fields[2] == remote else { continue }
            // Inode 0: a socket its process has closed; its uid column reads 0 whoever owned it.
            guard fields[9] != "0" else { return nil }
            return uid_t(fields[7])  // conversion: a failable parse of a String
        }
        return nil
    }

    /// An address as /proc/net/tcp prints it: the IPv4 address as the 32-bit word in host
    /// (little-endian) order, the port big-endian, both upper-case hex. IPv6 (/proc/net/tcp6, for
    /// the proxy's `[::1]`): the 16 bytes as four such words.
    static func key(_ address: SocketAddress) -> String? {
        guard let port = address.port else { return nil }
        let portText = hex(UInt32(truncatingIfNeeded: port), digits: 4)
        switch address {
        case .v4(let v4):
            let word = v4.address.sin_addr.s_addr  // network order in memory, printed as a host-order word
            return hex(UInt32(littleEndian: word), digits: 8) + ":" + portText
        case .v6(let v6):
            let bytes = withUnsafeBytes(of: v6.address.sin6_addr) { Array($0) }
            guard bytes.count == 16 else { return nil }
            let words = stride(from: 0, to: 16, by: 4).map { index in
                bytes[index..<index + 4].reversed().reduce(0 as UInt32) { $0 << 8 | UInt32(truncatingIfNeeded: $1) }
            }
            return words.map { hex($0, digits: 8) }.joined() + ":" + portText
        default:
            return nil
        }
    }

    static func hex(_ value: UInt32, digits: Int) -> String {
        let text = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, digits - text.count)) + text
    }
}
