import CTokendShims
import Glibc

/// Starts a child process through `tokend_spawn` (CTokendShims.h): descriptors 0, 1 and 2 are the
/// ones given (-1: /dev/null) and every other one is closed, with a clean signal state. The one
/// place that turns Swift strings into the C argument and environment vectors.
public enum ChildSpawn {
    /// The child's pid, or the errno value that kept it from starting. `argv[0]` is the program,
    /// looked up on PATH when `searchPath`; `environment` nil passes on this process's.
    /// `ownProcessGroup`: a group of its own, so that killing the group reaches its children.
    public static func start(
        _ argv: [String], environment: [String: String]? = nil, searchPath: Bool = true,
        stdin: Int32 = -1, stdout: Int32 = -1, stderr: Int32 = -1, ownProcessGroup: Bool = false
    ) -> Result<pid_t, SpawnFailure> {
        guard let program = argv.first else { return .failure(SpawnFailure(errno: EINVAL)) }
        let cArguments = argv.map { strdup($0) } + [nil]
        let cEnvironment = environment.map { $0.map { strdup("\($0.key)=\($0.value)") } + [nil] }
        defer {
            cArguments.forEach { free($0) }
            cEnvironment?.forEach { free($0) }
        }
        var pid: pid_t = 0
        func spawn(_ envp: UnsafePointer<UnsafeMutablePointer<CChar>?>) -> Int32 {
            tokend_spawn(&pid, program, searchPath ? 1 : 0, cArguments, envp, stdin, stdout, stderr, ownProcessGroup ? 1 : 0)
        }
        let spawned = cEnvironment.map { spawn($0) } ?? spawn(environ)
        return spawned == 0 ? .success(pid) : .failure(SpawnFailure(errno: spawned))
    }
}

extension ChildSpawn {
    /// Whether the child has exited, without reaping it: the pid stays ours to signal until then.
    public static func hasExited(_ pid: pid_t) -> Bool {
        var info = siginfo_t()
        return waitid(P_PID, id_t(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info._sifields._sigchld.si_pid == pid
    }

    /// Waits for the child and reaps it: its wait status.
    public static func reap(_ pid: pid_t) -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0, errno == EINTR {}
        return status
    }

    /// What is left in a pipe once its child has exited, without waiting for writers it left
    /// behind (a daemon it started); `output` holds at most `limit` bytes, the rest is dropped.
    public static func drain(_ fd: Int32, into output: inout [UInt8], buffer: inout [UInt8], limit: Int) {
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            guard count > 0 else { return }
            output.append(contentsOf: buffer[0..<min(count, max(0, limit - output.count))])
        }
    }
}

/// Why a child did not start: posix_spawn's errno value.
public struct SpawnFailure: Error, Sendable, Equatable {
    public var errno: Int32
}
