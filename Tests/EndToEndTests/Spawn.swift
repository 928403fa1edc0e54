import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Runs a program to completion with stdin/stdout/stderr redirected to files that the child
/// itself opens (posix_spawn file actions): the test process opens no descriptor, so hundreds of
/// runs in a loop cannot leak any, and no pipe end can be inherited by an unrelated child.
func spawnAndWait(_ path: String, _ arguments: [String], environment: [String: String], stdin: String, stdout: String, stderr: String) throws -> Int32 {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, stdin, O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 1, stdout, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    posix_spawn_file_actions_addopen(&actions, 2, stderr, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    let argv = ([path] + arguments).map { strdup($0) } + [nil]
    let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer {
        argv.forEach { free($0) }
        envp.forEach { free($0) }
    }
    var pid: pid_t = 0
    let result = posix_spawn(&pid, path, &actions, nil, argv, envp)
    guard result == 0 else { throw HarnessError("posix_spawn \(path): \(String(cString: strerror(result)))") }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0 {
        guard errno == EINTR else { throw HarnessError("waitpid: \(String(cString: strerror(errno)))") }
    }
    // WIFEXITED / WEXITSTATUS, spelled out: the C macros are not imported into Swift.
    if status & 0x7F == 0 { return (status >> 8) & 0xFF }
    return 128 + (status & 0x7F)
}
