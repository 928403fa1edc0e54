import CTokendShims
import Synchronization
import TokendCore
import TokendSystem
#if canImport(Glibc)
import Glibc
#endif

/// One run of a hook command: spawned without a shell in a process group of its own, stdin from
/// /dev/null, stdout and stderr captured together, killed (the whole group) past its deadline.
/// Blocking, so it runs on a dispatch thread, never on the daemon's event loops.
enum HookProcess {
    enum Ending: Sendable, Equatable {
        case exited(Int32)
        case signalled(Int32)
        /// Killed after the timeout.
        case timedOut
        /// posix_spawn failed: no such program, not executable, … (an errno).
        case notStarted(Int32)
    }

    struct Outcome: Sendable {
        var ending: Ending
        /// What the command printed, at most `outputLimit` bytes.
        var output: [UInt8]
    }

    /// A hook is meant to print a line or two; beyond 64 KiB the rest is read and dropped, so a
    /// chatty hook can neither block on a full pipe nor flood the journal.
    static let outputLimit = 64 * 1024

    /// Process groups of the hooks one daemon runs now: it kills them when it stops, so that no
    /// hook (or a child it left behind) outlives the daemon that started it. One per daemon, so
    /// that a daemon a test stops never kills another's hooks.
    final class Running: Sendable {
        private let groups = Mutex<Set<pid_t>>([])

        init() {}

        /// Kills every running hook's process group (daemon shutdown).
        func killAll() {
            groups.withLock { groups in
                for group in groups { kill(-group, SIGKILL) }
            }
        }

        fileprivate func insert(_ group: pid_t) { groups.withLock { _ = $0.insert(group) } }
        fileprivate func remove(_ group: pid_t) { groups.withLock { _ = $0.remove(group) } }
    }

    /// Runs `argv` (argv[0] looked up on PATH) with exactly `environment`, off the caller's thread.
    static func run(_ argv: [String], environment: [String: String], timeout: Double, running: Running) async -> Outcome {
        await withCheckedContinuation { continuation in
            DedicatedThread.start("tokend-hook") {
                continuation.resume(returning: runBlocking(argv, environment: environment, timeout: timeout, running: running))
            }
        }
    }

    static func runBlocking(_ argv: [String], environment: [String: String], timeout: Double, running: Running = Running()) -> Outcome {
        var pipeEnds: [Int32] = [-1, -1]
        guard tokend_pipe_cloexec(&pipeEnds) == 0 else { return Outcome(ending: .notStarted(errno), output: []) }
        // stdin from /dev/null, stdout and stderr into the pipe, none of the daemon's sockets,
        // a clean signal state, and a process group of its own so the timeout kills its children.
        let spawned = ChildSpawn.start(argv, environment: environment, stdout: pipeEnds[1], stderr: pipeEnds[1], ownProcessGroup: true)
        close(pipeEnds[1])
        let pid: pid_t
        switch spawned {
        case .success(let started): pid = started
        case .failure(let failure):
            close(pipeEnds[0])
            return Outcome(ending: .notStarted(failure.errno), output: [])
        }
        running.insert(pid)
        defer { running.remove(pid) }
        let (output, timedOut) = collect(from: pipeEnds[0], pid: pid, deadline: clockSeconds(CLOCK_MONOTONIC) + timeout)
        close(pipeEnds[0])
        if timedOut {
            kill(-pid, SIGKILL)
            _ = reap(pid)
            return Outcome(ending: .timedOut, output: output)
        }
        let status = reap(pid)
        // WIFEXITED / WTERMSIG spelled out: the C macros are not imported into Swift.
        let ending: Ending = status & 0x7F == 0 ? .exited((status >> 8) & 0xFF) : .signalled(status & 0x7F)
        return Outcome(ending: ending, output: output)
    }

    /// Reads the pipe until the hook exits or the deadline passes. The hook exiting, not
    /// end-of-file, ends the wait: a child it left in the background may hold the pipe open.
    private static func collect(from fd: Int32, pid: pid_t, deadline: Double) -> (output: [UInt8], timedOut: Bool) {
        var output: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        var open = true
        while true {
            if exited(pid) {
                if open { drain(fd, into: &output, buffer: &buffer) }
                return (output, false)
            }
            let remaining = deadline - clockSeconds(CLOCK_MONOTONIC)
            if remaining <= 0 { return (output, true) }
            // 100 ms at most between looks at the process: how late an exit is noticed when a
            // background child keeps the pipe open.
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)  // conversion: a C constant
            let waitMilliseconds = Int32(min(remaining, 0.1) * 1000) + 1  // conversion: remaining is in (0, 0.1] here
            guard open else {
                usleep(UInt32(waitMilliseconds) * 1000)  // conversion: waitMilliseconds is in 1 … 101
                continue
            }
            guard poll(&descriptor, 1, waitMilliseconds) > 0 else { continue }
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count > 0 {
                output.append(contentsOf: buffer[0..<min(count, max(0, outputLimit - output.count))])
            } else if count == 0 || errno != EINTR {
                open = false  // every writer is gone: the hook is exiting
            }
        }
    }

    /// The hook's exit, drain and reaping: the one spelling in `ChildSpawn`.
    private static func exited(_ pid: pid_t) -> Bool { ChildSpawn.hasExited(pid) }

    private static func drain(_ fd: Int32, into output: inout [UInt8], buffer: inout [UInt8]) {
        ChildSpawn.drain(fd, into: &output, buffer: &buffer, limit: outputLimit)
    }

    private static func reap(_ pid: pid_t) -> Int32 { ChildSpawn.reap(pid) }
}
