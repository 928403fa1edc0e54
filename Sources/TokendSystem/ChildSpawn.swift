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

/// Why a child did not start: posix_spawn's errno value.
public struct SpawnFailure: Error, Sendable, Equatable {
    public var errno: Int32
}
