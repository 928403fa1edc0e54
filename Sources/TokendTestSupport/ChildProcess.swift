import CTokendShims
import Foundation
import TokendCore
import TokendSystem
#if canImport(Glibc)
import Glibc
#endif

/// The one way tests start programs: `run` runs a short-lived one to completion, with stdin,
/// stdout and stderr redirected to files; `start` starts a background one that `stop` (SIGKILL)
/// or `terminate` (SIGTERM) ends. Both spawn through `tokend_spawn`, the daemon's spawner.
/// Foundation's `Process` proved unfit here: it
/// leaks pipe ends into unrelated children (so end-of-file never comes), passes on a signal mask
/// that blocks SIGTERM, and under heavy parallel spawning its `terminationStatus` can trap.
public enum ChildProcess {
    public struct Result: Sendable {
        /// The program and its arguments, for error messages (never a secret: those go on stdin).
        public var command: String
        public var status: Int32
        public var stdout: String
        public var stderr: String

        /// Self if the program succeeded; else an error with its stderr.
        @discardableResult
        public func check() throws -> Result {
            guard status == 0 else { throw ChildProcessError("`\(command)` exited with \(status): \(stderr)") }
            return self
        }
    }

    /// A hung child is killed after this long: generous for two shared cores.
    public static let defaultTimeout: Double = 60

    /// Runs `path` (or a name on PATH) with `arguments`; `stdin` is fed from a 0600 file in a
    /// private directory.
    public static func run(
        _ path: String, _ arguments: [String], environment: [String: String], stdin: String? = nil, timeout: Double = defaultTimeout
    ) throws -> Result {
        let scratch: TemporaryDirectory
        do { scratch = try TemporaryDirectory(prefix: "tokend-child") } catch {
            throw ChildProcessError("cannot create a temporary directory: \(error)")
        }
        defer { try? scratch.remove() }
        let directory = scratch.path
        var input = "/dev/null"
        if let stdin {
            input = directory + "/in"
            guard FileManager.default.createFile(atPath: input, contents: Data(stdin.utf8), attributes: [.posixPermissions: 0o600]) else {
                throw ChildProcessError("cannot write \(input)")
            }
        }
        let files = try [(input, O_RDONLY), (directory + "/out", O_WRONLY | O_CREAT | O_TRUNC), (directory + "/err", O_WRONLY | O_CREAT | O_TRUNC)]
            .map { try openForChild($0.0, $0.1) }
        defer { files.forEach { close($0) } }
        let pid = try spawn(path, arguments, environment: environment, descriptors: (files[0], files[1], files[2]))
        let status = try wait(for: pid, timeout: timeout)
        let stdout = (try? String(contentsOfFile: directory + "/out", encoding: .utf8)) ?? ""
        let stderr = (try? String(contentsOfFile: directory + "/err", encoding: .utf8)) ?? ""
        return Result(command: ([path] + arguments).joined(separator: " "), status: status, stdout: stdout, stderr: stderr)
    }

    /// Runs the test named by `filter` in a child: this test binary again, with this process's
    /// environment changed by `changes` (nil removes a variable). For checks of process-wide
    /// state (descriptor counts, environment) that tests running in parallel would disturb.
    public static func runTest(_ filter: String, changing changes: [String: String?], timeout: Double = defaultTimeout) throws -> Result {
        let testBinary = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        var environment = ProcessInfo.processInfo.environment
        for (name, value) in changes { environment[name] = value }
        return try run(testBinary, ["--testing-library", "swift-testing", "--filter", filter], environment: environment, timeout: timeout)
    }

    /// Starts a long-running program (a server, a `watch`) with stdin from the descriptor `stdin`
    /// (else /dev/null) and stdout and stderr appended to `output`; `stop` or `terminate` ends it.
    public static func start(
        _ path: String, _ arguments: [String], environment: [String: String], stdin: Int32? = nil, output: String = "/dev/null"
    ) throws -> pid_t {
        let log = try openForChild(output, O_WRONLY | O_CREAT | O_APPEND)
        defer { close(log) }
        return try spawn(path, arguments, environment: environment, descriptors: (stdin ?? -1, log, log))
    }

    /// SIGKILLs and reaps what `start` started.
    public static func stop(_ pid: pid_t) {
        kill(pid, SIGKILL)
        _ = ChildSpawn.reap(pid)
    }

    /// SIGTERMs what `start` started and reaps it: its exit status (128 + signal when killed).
    /// One that ignores SIGTERM is SIGKILLed past `timeout`, so a hung child fails the test
    /// instead of hanging it.
    public static func terminate(_ pid: pid_t, timeout: Double = defaultTimeout) throws -> Int32 {
        kill(pid, SIGTERM)
        return try wait(for: pid, timeout: timeout)
    }

    /// The exit status of what `start` started if it has ended (and then it is reaped: do not
    /// `stop` or `terminate` it again), nil while it runs.
    public static func exitStatusIfEnded(_ pid: pid_t) -> Int32? {
        var status: Int32 = 0
        var result: pid_t
        repeat { result = waitpid(pid, &status, WNOHANG) } while result < 0 && errno == EINTR
        return result == pid ? decode(status) : nil
    }

    /// Opens `path` for a child's stdin, stdout or stderr (0600 when created), close-on-exec so
    /// that no other test's child inherits it.
    private static func openForChild(_ path: String, _ flags: Int32) throws -> Int32 {
        let fd = open(path, flags | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw ChildProcessError("cannot open \(path): \(String(cString: strerror(errno)))") }
        return fd
    }

    private static func spawn(
        _ path: String, _ arguments: [String], environment: [String: String], descriptors: (in: Int32, out: Int32, err: Int32)
    ) throws -> pid_t {
        // A bare name (`secret-tool`) is looked up on PATH, as the daemon's spawner does for hooks.
        let spawned = ChildSpawn.start(
            [path] + arguments, environment: environment, searchPath: !path.contains("/"), stdin: descriptors.in, stdout: descriptors.out, stderr: descriptors.err)
        switch spawned {
        case .success(let pid): return pid
        case .failure(let failure): throw ChildProcessError("posix_spawn \(path): \(String(cString: strerror(failure.errno)))")
        }
    }

    /// The child's exit status (128 + signal when killed), SIGKILLing it past the timeout.
    static func wait(for pid: pid_t, timeout: Double) throws -> Int32 {
        let clock = SystemWallClock()
        let deadline = clock.now().addingTimeInterval(timeout)
        var status: Int32 = 0
        while true {
            let result = waitpid(pid, &status, WNOHANG)
            if result == pid { break }
            if result < 0, errno != EINTR { throw ChildProcessError("waitpid: \(String(cString: strerror(errno)))") }
            if clock.now() > deadline { kill(pid, SIGKILL) }
            usleep(2_000)  // 2 ms: short tools finish in tens of milliseconds
        }
        return decode(status)
    }

    /// WIFEXITED / WEXITSTATUS spelled out: the C macros are not imported into Swift.
    private static func decode(_ status: Int32) -> Int32 {
        status & 0x7F == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
    }
}

/// Why a program (or the private keyring it drives) could not be run, started or waited for.
public struct ChildProcessError: Error, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}
