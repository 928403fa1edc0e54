import CTokendShims
import Glibc
import TokendSystem

/// One run of a store's helper program (`pass`, and through it gpg): no shell, a process group of
/// its own, the secret on stdin (never in argv), stdout and stderr captured apart, and the whole
/// group killed at the deadline, so a gpg waiting on a pinentry nobody sees never holds the store.
struct StoreCommand {
    struct Outcome: Sendable {
        /// The exit status; nil when it was killed at the deadline or died of a signal.
        var status: Int32?
        var timedOut: Bool
        var stdout: [UInt8]
        var stderr: [UInt8]

        var stderrText: String { String(decoding: stderr, as: UTF8.self) }
    }

    /// Why the program did not start: an errno value.
    struct NotStarted: Error {
        var errno: Int32
    }

    /// A token set is a few KiB; 1 MiB of output is far beyond any entry tokend writes, and bounds
    /// what a misbehaving program can make the daemon hold.
    static let outputLimit = 1 << 20

    /// Runs `argv` with exactly `environment`; nil when it could not start (errno in `failure`).
    static func run(_ argv: [String], environment: [String: String], stdin: [UInt8] = [], timeout: Double) -> Result<Outcome, NotStarted> {
        var input: [Int32] = [-1, -1], output: [Int32] = [-1, -1], errors: [Int32] = [-1, -1]
        guard tokend_pipe_cloexec(&input) == 0 else { return .failure(NotStarted(errno: errno)) }
        guard tokend_pipe_cloexec(&output) == 0 else { closeAll(input); return .failure(NotStarted(errno: errno)) }
        guard tokend_pipe_cloexec(&errors) == 0 else { closeAll(input + output); return .failure(NotStarted(errno: errno)) }
        let spawned = ChildSpawn.start(argv, environment: environment, stdin: input[0], stdout: output[1], stderr: errors[1], ownProcessGroup: true)
        closeAll([input[0], output[1], errors[1]])
        guard case .success(let pid) = spawned else {
            closeAll([input[1], output[0], errors[0]])
            if case .failure(let failure) = spawned { return .failure(NotStarted(errno: failure.errno)) }
            return .failure(NotStarted(errno: EINVAL))
        }
        let deadline = clockSeconds(CLOCK_MONOTONIC) + timeout
        var pending = stdin[...]
        var writer: Int32 = input[1]
        if pending.isEmpty { close(writer); writer = -1 }
        else { _ = fcntl(writer, F_SETFL, fcntl(writer, F_GETFL) | O_NONBLOCK) }
        var readers: [Int32] = [output[0], errors[0]]
        var collected: [[UInt8]] = [[], []]
        var buffer = [UInt8](repeating: 0, count: 16384)
        var timedOut = false
        while writer >= 0 || readers.contains(where: { $0 >= 0 }) {
            let remaining = deadline - clockSeconds(CLOCK_MONOTONIC)
            if remaining <= 0 { timedOut = true; break }
            // The program exiting ends the wait, not end-of-file: a gpg-agent it started may keep
            // the pipes open for as long as it runs.
            if ChildSpawn.hasExited(pid) {
                for (index, fd) in readers.enumerated() where fd >= 0 { ChildSpawn.drain(fd, into: &collected[index], buffer: &buffer, limit: outputLimit) }
                break
            }
            var fds: [pollfd] = []
            if writer >= 0 { fds.append(pollfd(fd: writer, events: Int16(POLLOUT), revents: 0)) }  // conversion: a C constant
            for fd in readers where fd >= 0 { fds.append(pollfd(fd: fd, events: Int16(POLLIN), revents: 0)) }  // conversion: a C constant
            // At most 100 ms a wait: how late the deadline is noticed.
            let ready = poll(&fds, nfds_t(fds.count), Int32(min(remaining, 0.1) * 1000) + 1)  // conversion: remaining is in (0, 0.1] here
            guard ready > 0 else { continue }
            for entry in fds where entry.revents != 0 {
                if entry.fd == writer {
                    let written = pending.withUnsafeBytes { write(writer, $0.baseAddress, $0.count) }
                    if written > 0 { pending = pending.dropFirst(written) }
                    if pending.isEmpty || (written < 0 && errno != EAGAIN && errno != EINTR) { close(writer); writer = -1 }
                } else if let index = readers.firstIndex(of: entry.fd) {
                    let count = buffer.withUnsafeMutableBytes { read(entry.fd, $0.baseAddress, $0.count) }
                    if count > 0 {
                        collected[index].append(contentsOf: buffer[0..<min(count, max(0, outputLimit - collected[index].count))])
                    } else if count == 0 || errno != EINTR {
                        close(entry.fd)
                        readers[index] = -1
                    }
                }
            }
        }
        if writer >= 0 { close(writer) }
        closeAll(readers.filter { $0 >= 0 })
        if timedOut { kill(-pid, SIGKILL) }
        let status = ChildSpawn.reap(pid)
        // WIFEXITED / WEXITSTATUS spelled out: the C macros are not imported into Swift.
        let exited = !timedOut && status & 0x7F == 0
        return .success(Outcome(status: exited ? (status >> 8) & 0xFF : nil, timedOut: timedOut, stdout: collected[0], stderr: collected[1]))
    }

    private static func closeAll(_ fds: [Int32]) {
        for fd in fds where fd >= 0 { close(fd) }
    }
}
