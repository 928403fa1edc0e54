import ArgumentParser
import CTokendShims
import Glibc
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle
import TokendCore
import TokendProtocol
import TokendServer
import TokendSystem

/// `tokend`: the daemon's command line. Runs in the foreground; systemd (or a shell) supervises.
@main
struct TokendCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tokend",
        abstract: "Keeps Firebase and OpenID Connect sessions alive and serves their tokens on a Unix socket.",
        // The text of tokend(1) as well: scripts/package makes the man page from this parser.
        discussion: """
            Runs in the foreground and logs to stderr (with journald's priority prefixes when \
            stderr is the journal). Under systemd, \
            tokend.socket starts it on the first client connection (socket activation) and it \
            reports READY=1, STATUS= and watchdog pings (Type=notify). Client: tokenctl.

            Configuration: $XDG_CONFIG_HOME/tokend/config.toml. Refresh tokens live in the Secret \
            Service (the login keyring), never in a file.

            Signals: SIGHUP re-reads the configuration; tokenctl reload (which systemctl --user \
            reload tokend runs) does the same and waits until it is applied. SIGTERM \
            or SIGINT stop it: requests in flight are answered, a keyring write in flight is \
            finished.

            Exit statuses: 0 after a clean stop, 64 usage, 73 the socket cannot be used, 75 \
            another tokend already serves the socket, 1 anything else.
            """,
        version: Daemon.version)

    @Option(help: "Socket path (default: $TOKEND_SOCKET, else $XDG_RUNTIME_DIR/tokend/tokend.sock).")
    var socket: String?

    @Option(help: "Configuration file (default: $TOKEND_CONFIG, else $XDG_CONFIG_HOME/tokend/config.toml).")
    var config: String?

    @Option(help: "Least severe log level written to stderr: trace, debug, info, notice, warning, error.")
    var logLevel: Logger.Level = .info

    @Flag(help: "Prefix each log line with its sd-daemon(3) priority (<6> info, <4> warning …), as it is by default when stderr is the journal (JOURNAL_STREAM).")
    var logPriorities = false

    @Option(help: "Seconds a keyring operation may take before the keyring counts as unavailable.")
    var keyringTimeout: Double = DaemonOptions.defaultKeyringTimeout

    func validate() throws {
        guard keyringTimeout > 0, keyringTimeout <= 120 else { throw ValidationError("--keyring-timeout must be between 0 and 120 seconds") }
    }

    /// Exit statuses (sysexits): 0 after a clean shutdown, 64 usage, 73 the socket cannot be
    /// created, 75 another tokend already serves the socket, 1 anything else.
    static func exitStatus(for error: DaemonError) -> Int32 {
        switch error.code {
        case .socket: 73
        case .alreadyRunning: 75
        }
    }

    /// Synchronous, so that nothing of Swift Concurrency runs on libdispatch: its jobs go to
    /// NIO's event loops, and the main thread waits for the daemon. Once any Dispatch worker has
    /// run, libdispatch wakes every second for good (`TimerThread`); an idle daemon must sleep.
    func run() throws {
        // One NIO event loop, not one per core: the socket's requests are answered on the accept
        // loop's own thread; the loops carry provider HTTP, waiting clients and the proxy. Each
        // further loop kept ~75 KB (its 4,096-task array, stack, malloc arena) and added no
        // throughput (docs/architecture.md, "Memory at idle"). NIO's own variable still sets it.
        if getenv("NIO_SINGLETON_GROUP_LOOP_COUNT") == nil {
            NIOSingletons.groupLoopCountSuggestion = 1
        }
        // One malloc arena, not one per thread, before any thread exists: the idle release frees
        // a thread arena's empty pages but never its top, left as high as its thread's busiest
        // moment (1,000 `tokenctl` calls kept ~210 KB more). glibc's own variables still set it.
        if getenv("MALLOC_ARENA_MAX") == nil, getenv("GLIBC_TUNABLES").map({ !String(cString: $0).contains("arena_max") }) ?? true {
            _ = tokend_malloc_one_arena()
        }
        let onLoops = TasksOnEventLoops.install()
        let served = MultiThreadedEventLoopGroup.singleton.any().makePromise(of: Void.self)
        served.completeWithTask { try await serve(tasksOnLoops: onLoops) }
        try served.futureResult.wait()
    }

    func serve(tasksOnLoops: Bool) async throws {
        let level = logLevel
        let prefixed = logPriorities || JournaldLogHandler.stderrIsJournal(Environment.process().dictionary)
        LoggingSystem.bootstrap { JournaldLogHandler(label: $0, level: level, prefixed: prefixed) }
        let logger = Logger(label: "tokend")
        if !tasksOnLoops {
            logger.warning("Swift Concurrency could not be moved onto NIO's event loops: tasks run on libdispatch, which wakes an idle tokend every second")
        }
        let options = DaemonOptions(socketPath: socket, configPath: config, environment: Environment.process().dictionary, keyringTimeout: keyringTimeout)
        do {
            let daemon = try Daemon.build(options, logger: logger)
            // SIGTERM and SIGINT through the daemon's own signal thread, not ServiceLifecycle's
            // Dispatch signal sources.
            let group = ServiceGroup(configuration: .init(services: [daemon], logger: logger))
            let stops = ProcessSignals.shared.stream(of: [SIGTERM, SIGINT])
            let stopper = Task {
                for await _ in stops { await group.triggerGracefulShutdown() }
            }
            defer { stopper.cancel() }
            try await group.run()
        } catch let error as DaemonError {
            logger.critical("cannot start: \(error.description)")
            throw ExitCode(Self.exitStatus(for: error))
        }
    }
}

/// `--log-level info`: swift-log's level names are the accepted values.
extension Logger.Level: @retroactive ExpressibleByArgument {}
