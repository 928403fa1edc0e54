import CTokendShims
import Foundation
import TokendCore
import Glibc
import Synchronization
import TokendSystem

/// A session bus and an unlocked gnome-keyring of its own, for tests: never the user's.
///
/// Set up by the one private-session set-up every suite uses, `scripts/lib/private-session
/// --serve`: everything lives under one temporary directory (HOME, XDG_RUNTIME_DIR, the bus
/// socket, the keyring files, the daemons' logs) that `stop()` removes. The script reads our end
/// of a pipe: if the test process dies without `stop()`, the pipe closes and the script stops the
/// bus and the keyring. The keyring is driven (lock, unlock, restart, pause) by the same script's
/// verbs, `private-session keyring VERB`, the one implementation scripts/chaos and the shell
/// suites use too.
public final class PrivateKeyring: Sendable {
    /// The temporary directory that holds everything.
    public let root: URL
    /// The variables a child process needs to use this keyring (and not the user's).
    public let environment: [String: String]
    /// Held while a keyring verb runs, so that two never interleave.
    private let state = Mutex(State())

    private struct State {
        /// `private-session --serve`, which owns the bus and the keyring; nil once reaped.
        var session: pid_t?
        /// Our end of the session's stdin.
        var sessionPipe: Int32 = -1
        var stopped = false
    }

    /// How long to wait for a daemon to come up or a command to finish. Generous: the CI
    /// machine has two shared cores, and a keyring restarted mid-suite took over 20 s there.
    static let readyTimeout: Double = 45
    /// A keyring verb's bound: it bounds each of its own waits by the same 45 s, and a restart
    /// may wait for a stop (its reaps, the name's release) and a start of a few waits; past this
    /// it hangs.
    static let verbTimeout: Double = readyTimeout * 10
    /// Between two readiness probes: each runs `gdbus`, a few milliseconds.
    static let pollInterval: Double = 0.02
    /// The set-up script, found from this file: tests run from the checkout.
    static let sessionScript = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("scripts/lib/private-session").path
    /// Variables that could lead a child to the user's own session or display.
    static let inheritedVariablesToDrop = [
        "DBUS_SESSION_BUS_ADDRESS", "DBUS_SESSION_BUS_PID", "DISPLAY", "WAYLAND_DISPLAY",
        "GNOME_KEYRING_CONTROL", "SSH_AUTH_SOCK", "XDG_SESSION_ID",
    ]

    private init(root: URL, environment: [String: String]) {
        self.root = root
        self.environment = environment
    }

    /// Starts a bus and an unlocked keyring with a login collection, and waits until both answer.
    public static func start() throws -> PrivateKeyring {
        // Short: the bus socket lives inside, and a Unix socket path has 107 bytes at most.
        let root = try TemporaryDirectory(prefix: "tokend-privkr", in: "/tmp").url
        let input: (read: Int32, write: Int32)
        var session: pid_t?
        do {
            input = try Self.pipe()
            defer { close(input.read) }
            var environment = ProcessInfo.processInfo.environment
            environment["TOKEND_SESSION_ROOT"] = root.path
            // ChildProcess starts it with an empty signal mask: SIGTERM is blocked on Swift's
            // worker threads, and a gnome-keyring started so ignores SIGTERM forever.
            session = try ChildProcess.start(
                "bash", [sessionScript, "--serve", "--private-home"], environment: environment, stdin: input.read,
                output: root.appendingPathComponent("session.log").path)
        } catch {
            try? FileManager.default.removeItem(at: root)
            throw ChildProcessError("cannot start \(sessionScript): \(error)")
        }
        let ready: PrivateKeyring
        do {
            let file = root.appendingPathComponent("session.env")
            try waitUntil("the private session (\(sessionScript) --serve)", logs: root) {
                if let pid = session, ChildProcess.exitStatusIfEnded(pid) != nil {
                    session = nil
                    throw ChildProcessError("private-session exited; see \(root.path)/session.log")
                }
                return FileManager.default.fileExists(atPath: file.path)
            }
            var environment: [String: String] = [:]
            for line in try String(contentsOf: file, encoding: .utf8).split(separator: "\n") {
                guard let equals = line.firstIndex(of: "=") else { continue }
                environment[String(line[..<equals])] = String(line[line.index(after: equals)...])
            }
            guard environment["TOKEND_SESSION_PASSWORD_FILE"] != nil, environment["DBUS_SESSION_BUS_ADDRESS"] != nil else {
                throw ChildProcessError("private-session wrote no bus or password; see \(root.path)/session.env")
            }
            ready = PrivateKeyring(root: root, environment: environment)
        } catch {
            close(input.write)
            if let session { _ = try? ChildProcess.terminate(session, timeout: Self.readyTimeout) }
            try? FileManager.default.removeItem(at: root)
            throw error
        }
        ready.state.withLock { state in
            state.session = session
            state.sessionPipe = input.write
        }
        return ready
    }

    deinit { stop() }

    /// The environment for a child process: this process's, minus anything pointing at the
    /// user's session, plus `environment`.
    public var childEnvironment: [String: String] {
        var merged = ProcessInfo.processInfo.environment
        for name in Self.inheritedVariablesToDrop { merged[name] = nil }
        merged.merge(environment) { _, ours in ours }
        return merged
    }

    // MARK: driving the keyring

    /// Locks the login collection, as a screen lock or a headless boot leaves it.
    public func lock() throws { try keyring("lock") }

    /// Unlocks the login collection in place, as gnome-keyring's prompt does when the user types
    /// the password (the daemon serving stays; one the bus activated meanwhile is the one unlocked).
    public func unlock() throws { try keyring("unlock") }

    /// Stops gnome-keyring; a fresh, unlocked one serves: what a crash and restart of the keyring
    /// daemon, or a login after a lock, looks like to its clients (a new daemon, new sessions).
    public func restart() throws { try keyring("restart") }

    /// Stops gnome-keyring only; the bus stays. The bus may D-Bus-activate a new (locked) one
    /// when a client asks for the Secret Service.
    public func stopKeyring() { try? keyring("stop") }

    /// Freezes gnome-keyring (SIGSTOP): the bus stays up, the Secret Service never answers.
    public func pauseKeyring() throws { try keyring("pause") }

    /// Undoes `pauseKeyring()`.
    public func resumeKeyring() throws { try keyring("resume") }

    /// `private-session keyring VERB` in this session; returns once the keyring is so.
    private func keyring(_ verb: String) throws {
        try state.withLock { state in
            guard !state.stopped else { throw ChildProcessError("keyring \(verb) after stop()") }
            try runVerb(verb)
        }
    }

    private func runVerb(_ verb: String) throws {
        try ChildProcess.run("bash", [Self.sessionScript, "keyring", verb], environment: childEnvironment, timeout: Self.verbTimeout).check()
    }

    /// Stops the keyring and the bus and removes the temporary directory. Idempotent.
    public func stop() {
        state.withLock { state in
            guard !state.stopped else { return }
            state.stopped = true
            try? runVerb("stop")
            let busPID = try? connectionPID(of: "org.freedesktop.DBus")
            if state.sessionPipe >= 0 {
                // EOF on its stdin makes the session stop the bus and exit.
                close(state.sessionPipe)
                state.sessionPipe = -1
            }
            // Killed past the timeout (it hung): the bus it would have stopped goes too.
            if let session = state.session, (try? ChildProcess.wait(for: session, timeout: Self.readyTimeout)) == 128 + SIGKILL,
                let busPID
            {
                kill(busPID, SIGKILL)
            }
            state.session = nil
            try? FileManager.default.removeItem(at: root)
        }
    }

    // MARK: inspecting it with the command-line tools

    /// The secret `secret-tool lookup application tokend account NAME` prints, nil if none.
    public func secretToolLookup(account: String) -> String? {
        guard let result = try? secretTool(["lookup", "application", "tokend", "account", account]), result.status == 0 else {
            return nil
        }
        return result.stdout
    }

    /// Runs `secret-tool` with this keyring's environment.
    public func secretTool(_ arguments: [String], stdin: String? = nil) throws -> ChildProcess.Result {
        try ChildProcess.run("secret-tool", arguments, environment: childEnvironment, stdin: stdin, timeout: Self.readyTimeout)
    }

    /// Runs scripts/lib/keyring-collection (a second collection, items in it) with this
    /// keyring's environment.
    public func collectionTool(_ arguments: [String], stdin: String? = nil) throws -> ChildProcess.Result {
        let script = URL(fileURLWithPath: Self.sessionScript).deletingLastPathComponent().appendingPathComponent("keyring-collection").path
        return try ChildProcess.run(script, arguments, environment: childEnvironment, stdin: stdin)
    }

    /// Runs `gdbus` with this keyring's environment.
    public func gdbus(_ arguments: [String]) throws -> ChildProcess.Result {
        try ChildProcess.run("gdbus", arguments, environment: childEnvironment, timeout: Self.readyTimeout)
    }

    // MARK: process-wide use

    private static let processWide = Mutex<PrivateKeyring?>(nil)

    /// One private keyring for the whole test process, started on first use, with this
    /// process's `DBUS_SESSION_BUS_ADDRESS` pointed at it. libsecret binds to the session bus
    /// the first time it is used and never lets go, so every suite that calls libsecret in
    /// process must call this before its first keyring call. Stopped when the process exits.
    public static func sharedForThisProcess() throws -> PrivateKeyring {
        try processWide.withLock { shared in
            if let shared { return shared }
            let keyring = try PrivateKeyring.start()
            // Only the bus address: HOME and XDG_* changed under other suites' feet would be
            // worse than useless, and libsecret needs nothing else.
            setenv("DBUS_SESSION_BUS_ADDRESS", keyring.environment["DBUS_SESSION_BUS_ADDRESS"]!, 1)
            shared = keyring
            atexit { PrivateKeyring.processWide.withLock { $0?.stop() } }
            return keyring
        }
    }

    // MARK: helpers

    private func connectionPID(of name: String) throws -> pid_t? {
        let result = try gdbus([
            "call", "--session", "--dest", "org.freedesktop.DBus", "--object-path", "/org/freedesktop/DBus",
            "--method", "org.freedesktop.DBus.GetConnectionUnixProcessID", name,
        ])
        // Success prints "(uint32 1234,)".
        guard result.status == 0 else { return nil }
        let digits = result.stdout.split(whereSeparator: { !$0.isNumber }).last
        return digits.flatMap { pid_t($0) }
    }

    private static func waitUntil(_ what: String, logs root: URL, _ condition: () throws -> Bool) throws {
        let deadline = SystemWallClock().now().addingTimeInterval(Self.readyTimeout)
        while true {
            if try condition() { return }
            if SystemWallClock().now() >= deadline {
                throw ChildProcessError("\(what) not ready within \(readyTimeout) s (logs in \(root.path))")
            }
            Thread.sleep(forTimeInterval: pollInterval)
        }
    }

    /// A pipe whose ends are not inherited by the children other code in this process spawns.
    private static func pipe() throws -> (read: Int32, write: Int32) {
        var fds: [Int32] = [-1, -1]
        // Close-on-exec from birth: a child spawned by another thread meanwhile inherits neither end.
        guard tokend_pipe_cloexec(&fds) == 0 else { throw ChildProcessError("pipe failed: errno \(errno)") }
        return (fds[0], fds[1])
    }
}
