import TokendProtocol
#if canImport(Glibc)
import Glibc
#endif

/// `tokend &` followed at once by `tokenctl token`: the daemon runs but has not bound its socket
/// yet. tokenctl then waits a moment for the socket, as it waits for an activated daemon's
/// answer, instead of failing with 69; a daemon that never listens still fails, and says so.
enum StartingDaemon {
    /// tokend binds its socket before it reads the keyring, milliseconds after its start; 5 s
    /// covers a loaded machine, and bounds what a tokend that listens elsewhere costs.
    static let patience = 5.0
    /// How often the socket is tried meanwhile: 50 ms is short beside a start, long beside a connect.
    static let interval: useconds_t = 50_000

    /// A connected client for `path`; while nothing listens there but a tokend started beside
    /// this tokenctl runs, tried again until `min(patience, timeout)` has passed.
    static func connect(path: String, settings: ConnectionSettings) throws(TokenctlError) -> BlockingClient {
        let clock = ContinuousClock()
        let start = clock.now
        // A timeout is validated positive and finite; were it not, the patience alone bounds the wait.
        let limit = settings.timeout.isFinite && settings.timeout > 0 ? min(patience, settings.timeout) : patience
        var daemon: Int32?
        while true {
            do {
                return try BlockingClient(path: path, connectTimeout: settings.readTimeout)
            } catch {
                guard error.code == .notReachable else { throw TokenctlError(client: error, path: path, timeout: settings.timeout) }
                daemon = daemon ?? runningDaemon()
                let waited = clock.now - start
                guard let pid = daemon else { throw TokenctlError(client: error, path: path, timeout: settings.timeout) }
                guard waited < .seconds(limit) else {
                    throw TokenctlError(
                        .notReachable,
                        "tokend (pid \(pid)) runs but did not listen at \(path) within \(Text.seconds(limit)) "
                            + "(\(TokenctlError.reason(error.description)))",
                        next: "check where it listens (its --socket, TOKEND_SOCKET) and its log")
                }
                usleep(interval)
            }
        }
    }

    /// The pid of a tokend started beside this tokenctl (`tokend &` then `tokenctl …`: the same
    /// parent), if any. Only a sibling: another tokend of this user (another session, a test
    /// suite's) serves its own socket, and must not make a plain "not running" wait.
    static func runningDaemon() -> Int32? {
        guard let directory = opendir("/proc") else { return nil }
        defer { closedir(directory) }
        let parent = getppid()
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard let pid = Int32(name), read("/proc/\(name)/comm") == "tokend\n", let stat = read("/proc/\(name)/stat") else { continue }  // conversion: failable parse
            // "PID (COMM) STATE PPID …": COMM may hold spaces and parentheses, so after the last ")".
            guard let close = stat.lastIndex(of: ")") else { continue }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            if fields.count > 1, Int32(fields[1]) == parent { return pid }  // conversion: failable parse
        }
        return nil
    }

    /// A small /proc file's text (at most 4 KiB: comm and status are far shorter), or nil.
    private static func read(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
        guard count > 0 else { return nil }
        return String(decoding: buffer.prefix(count), as: UTF8.self)
    }
}
