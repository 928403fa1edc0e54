// Audit/ — who asked (issue 49 item 2): the peer's identity read from the kernel, the records of
// served tokens, refusals and management calls, buffered off the answering threads and written
// as JSON Lines (and to the journal under systemd). Callers: the connections (`RequestRouter`,
// `AcceptLoop`) and the proxy; it calls nothing of theirs.

import CTokendShims
import TokendCore
#if canImport(Glibc)
import Glibc
#endif

/// A connected peer as the kernel reports it: SO_PEERCRED's pid, uid and gid when it connected,
/// and what /proc says of that pid (its executable and cgroup) when it was read. The pid is in
/// tokend's pid namespace (the kernel translates it), so a sandbox cannot choose it.
public struct PeerIdentity: Sendable, Equatable {
    public var pid: Int32
    public var uid: UInt32
    public var gid: UInt32
    /// /proc/PID/exe; nil when not read yet, or when the process was gone by then.
    public var executable: String?
    /// The cgroup v2 path (the `0::` line of /proc/PID/cgroup).
    public var cgroup: String?

    public init(pid: Int32, uid: UInt32, gid: UInt32, executable: String? = nil, cgroup: String? = nil) {
        self.pid = pid
        self.uid = uid
        self.gid = gid
        self.executable = executable
        self.cgroup = cgroup
    }

    /// A peer nothing is known of (an in-process test's request).
    public static let unknown = PeerIdentity(pid: 0, uid: 0, gid: 0)

    /// Whether /proc has been asked (the executable or the cgroup is known).
    var isResolved: Bool { executable != nil || cgroup != nil }

    /// SO_PEERCRED of a connected socket; nil when the kernel will not say.
    static func of(socket fd: Int32) -> PeerIdentity? {
        var peer = tokend_peer_credentials()
        guard tokend_peer_credentials_of(fd, &peer) == 0 else { return nil }
        return PeerIdentity(pid: peer.pid, uid: peer.uid, gid: peer.gid)
    }

    /// This peer with its executable and cgroup read from /proc. A process that has ended, or
    /// one we may not inspect (another uid, not dumpable), keeps them nil.
    func resolved() -> PeerIdentity {
        guard pid > 0 else { return self }
        var copy = self
        copy.executable = Self.readLink("/proc/\(pid)/exe")
        copy.cgroup = Self.cgroup(ofProcess: pid)
        return copy
    }

    /// The systemd unit the cgroup path names: its innermost `.scope` or `.service` component
    /// (`…/app.slice/app-build.scope` → `app-build.scope`); nil outside any (a bare slice).
    public var unit: String? { cgroup.flatMap(Self.unit(ofCgroup:)) }

    public static func unit(ofCgroup path: String) -> String? {
        path.split(separator: "/").last { $0.hasSuffix(".scope") || $0.hasSuffix(".service") }.map(String.init)
    }

    /// Whether the cgroup lies inside `unit` (any component of its path, so a process in a
    /// sub-cgroup of the scope counts as in it).
    public func isInside(unit: String) -> Bool {
        guard let cgroup else { return false }
        return cgroup.split(separator: "/").contains { $0 == unit }
    }

    /// Longest /proc/PID/cgroup read: one v2 line is a path, far below this; the rest is cut.
    static let maximumCgroupFile = 4096

    static func cgroup(ofProcess pid: Int32) -> String? {
        let fd = open("/proc/\(pid)/cgroup", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: maximumCgroupFile)
        let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard count > 0 else { return nil }
        // cgroup v2's one line is "0::PATH"; on a hybrid system the v2 line is still "0::". Split
        // as bytes: as a String, by Characters, the writer spent ~100,000 instructions a read.
        let prefix = Array("0::".utf8)
        let line = buffer[0..<count].split(separator: UInt8(ascii: "\n")).first { $0.starts(with: prefix) }
        return line.map { String(decoding: $0.dropFirst(prefix.count), as: UTF8.self).singleLine }
    }

    static func readLink(_ path: String) -> String? {
        var buffer = [Int8](repeating: 0, count: Int(PATH_MAX) + 1)  // conversion: a C constant, 4096
        let count = readlink(path, &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        return String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self).singleLine
    }
}
