import Foundation
import Testing
import TokendProtocol
import TokendTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Where the real tokend puts its socket, and what it refuses: the directory it makes is 0700 and
/// the socket 0600; a directory it did not make is never chmod'ed, and refused when others could
/// write to it or it belongs to someone else; a stale socket is replaced, a live one is not.
@Suite struct SocketDirectoryTests {
    /// A scratch directory with an empty configuration (no accounts: no keyring traffic).
    struct Scratch {
        let directory: TemporaryDirectory
        var config: String { directory.appending("config.toml") }

        init() throws {
            directory = try TemporaryDirectory(prefix: "tokend-socketdir")
            try "".write(toFile: directory.appending("config.toml"), atomically: true, encoding: .utf8)
        }

        /// No session bus (libsecret fails fast), nothing that names another socket.
        var environment: [String: String] {
            ["PATH": "/usr/bin:/bin", "HOME": directory.path, "XDG_RUNTIME_DIR": directory.path]
        }

        /// Runs tokend until it exits (for the cases it must refuse).
        func runToExit(socket: String) throws -> ChildProcess.Result {
            try ChildProcess.run(
                DaemonHarness.binDirectory + "/tokend", ["--socket", socket, "--config", config], environment: environment,
                timeout: Patience.seconds)
        }

        /// Starts tokend and waits until it answers `hello` on `socket`.
        func startServing(socket: String) async throws -> pid_t {
            _ = reapDaemonsAtExit
            let pid = try ChildProcess.start(
                DaemonHarness.binDirectory + "/tokend", ["--socket", socket, "--config", config], environment: environment)
            spawnedDaemons.withLock { _ = $0.insert(pid) }
            try await poll(timeout: Patience.seconds, "tokend did not answer on \(socket)") {
                if let status = ChildProcess.exitStatusIfEnded(pid) {
                    spawnedDaemons.withLock { _ = $0.remove(pid) }
                    throw HarnessError("tokend exited with \(status)")
                }
                return (try? BlockingClient(path: socket).call(.hello))?.ok == true
            }
            return pid
        }

        func stop(_ pid: pid_t) {
            _ = try? ChildProcess.terminate(pid, timeout: Patience.seconds)
            spawnedDaemons.withLock { _ = $0.remove(pid) }
        }
    }

    static func mode(_ path: String) -> mode_t? {
        var info = stat()
        return lstat(path, &info) == 0 ? info.st_mode & 0o7777 : nil
    }

    @Test func theDirectoryTokendMakesIs0700AndTheSocket0600() async throws {
        let scratch = try Scratch()
        defer { try? scratch.directory.remove() }
        let socket = scratch.directory.appending("made/tokend.sock")
        let daemon = try await scratch.startServing(socket: socket)
        defer { scratch.stop(daemon) }
        #expect(Self.mode(scratch.directory.appending("made")) == 0o700)
        #expect(Self.mode(socket) == 0o600)
    }

    /// `--socket ~/tokend.sock`: the home directory is used as it is, never chmod'ed to 0700.
    @Test func aDirectoryTokendDidNotMakeKeepsItsMode() async throws {
        let scratch = try Scratch()
        defer { try? scratch.directory.remove() }
        let home = scratch.directory.appending("home")
        #expect(mkdir(home, 0o700) == 0)
        #expect(chmod(home, 0o755) == 0)
        let socket = home + "/tokend.sock"
        let daemon = try await scratch.startServing(socket: socket)
        defer { scratch.stop(daemon) }
        #expect(Self.mode(home) == 0o755, "tokend changed the mode of a directory it did not make")
        #expect(Self.mode(socket) == 0o600)
    }

    @Test func aDirectoryOthersCanWriteToIsRefused() throws {
        let scratch = try Scratch()
        defer { try? scratch.directory.remove() }
        let open = scratch.directory.appending("open")
        #expect(mkdir(open, 0o700) == 0)
        #expect(chmod(open, 0o777) == 0)
        let run = try scratch.runToExit(socket: open + "/tokend.sock")
        #expect(run.status == 73)
        #expect(run.stderr.contains("writable by others"), "\(run.stderr)")
        #expect(Self.mode(open) == 0o777, "a refused directory is left as it was")
        #expect(Self.mode(open + "/tokend.sock") == nil, "no socket is made there")
    }

    @Test(.enabled(if: getuid() == 0, "chown to another user needs root"))
    func aDirectoryOfAnotherUserIsRefused() throws {
        let scratch = try Scratch()
        defer { try? scratch.directory.remove() }
        let theirs = scratch.directory.appending("theirs")
        #expect(mkdir(theirs, 0o700) == 0)
        #expect(chown(theirs, 65534, 65534) == 0)
        let run = try scratch.runToExit(socket: theirs + "/tokend.sock")
        #expect(run.status == 73)
        #expect(run.stderr.contains("belongs to uid 65534"), "\(run.stderr)")
    }

    /// A socket file left by a crash (nothing listens on it) is replaced.
    @Test func aStaleSocketIsRemoved() async throws {
        let scratch = try Scratch()
        defer { try? scratch.directory.remove() }
        let socket = scratch.directory.appending("tokend.sock")
        try Self.leaveStaleSocket(at: socket)
        let daemon = try await scratch.startServing(socket: socket)
        scratch.stop(daemon)
    }

    @Test func aSecondTokendOnALiveSocketIsRefused() async throws {
        let scratch = try Scratch()
        defer { try? scratch.directory.remove() }
        let socket = scratch.directory.appending("tokend.sock")
        let first = try await scratch.startServing(socket: socket)
        defer { scratch.stop(first) }
        let second = try scratch.runToExit(socket: socket)
        #expect(second.status == 75)
        #expect(second.stderr.contains("already serving"), "\(second.stderr)")
        #expect(try BlockingClient(path: socket).call(.hello).ok, "the first tokend still answers")
    }

    /// Binds a Unix socket at `path` and closes it without unlinking: what a killed daemon leaves.
    static func leaveStaleSocket(at path: String) throws {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw HarnessError("socket: \(errno)") }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0 else { throw HarnessError("bind \(path): \(errno)") }
    }
}
