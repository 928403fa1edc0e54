// Hooks/ — what runs on events: `[hooks]` commands and the desktop notification, spawned with
// a deadline and their own process group. It only listens to the engine's `EventHub`; nothing it
// does can hold up a refresh or a request.

import Logging
import Synchronization
import TokendCore
import TokendProtocol
#if canImport(Glibc)
import Glibc
#endif

/// Runs the `[hooks]` commands and the desktop notification on the daemon's events. It only
/// listens to the `EventHub`: a slow or hanging hook delays other runs of the same event and
/// nothing else — refreshes and requests never wait for it.
final class HookRunner: Sendable {
    /// A hook gets 10 s, then it and its process group are killed: long enough to post a message
    /// or restart a service, short enough that a queue of events does not grow behind it.
    static let defaultTimeout: Double = 10
    /// Events waiting behind a running hook of the same name; older ones are dropped beyond it
    /// (a hook that hangs must not grow the daemon's memory).
    static let queueLimit = 64

    struct Job: Sendable {
        var label: String
        var argv: [String]
        var environment: [String: String]
    }

    private struct Settings {
        var hooks: [String: [String]] = [:]
        var notify = true
    }

    private let settings = Mutex(Settings())
    /// The hooks running now, killed when the daemon stops (`killRunning`).
    private let running = HookProcess.Running()
    private let environment: [String: String]
    private let notifier: DesktopNotifier
    private let timeout: Double
    private let logger: Logger

    init(environment: [String: String], clock: any WallClock, logger: Logger, timeout: Double = defaultTimeout) {
        // A hook never sees a token, even one the daemon was started with by `tokenctl exec`.
        self.environment = environment.filter { !$0.key.hasPrefix("TOKEND_TOKEN") }
        self.notifier = DesktopNotifier(environment: environment, clock: clock)
        self.timeout = timeout
        self.logger = logger
    }

    /// Takes the `[hooks]` table and `notify` of a (re)loaded configuration.
    func apply(_ configuration: Configuration) {
        settings.withLock {
            $0.hooks = configuration.hooks
            $0.notify = configuration.notify
        }
    }

    /// Runs until `events` ends or this task is cancelled (daemon shutdown). Each event name's
    /// queue is drained by a child task, so no hook run outlives this call.
    func run(_ events: AsyncStream<Event>) async {
        // One queue, and one child draining it, per event name: runs of one event never overlap.
        var queues: [String: AsyncStream<Job>.Continuation] = [:]
        await withDiscardingTaskGroup { group in
            for await event in events {
                let name = event.event.rawValue
                for job in jobs(for: event) {
                    if queues[name] == nil {
                        let (stream, continuation) = AsyncStream<Job>.makeStream(bufferingPolicy: .bufferingNewest(Self.queueLimit))
                        queues[name] = continuation
                        group.addTask { [self] in
                            for await job in stream { await execute(job, event: name) }
                        }
                    }
                    queues[name]?.yield(job)
                }
            }
            for continuation in queues.values { continuation.finish() }
        }
    }

    /// What `event` runs, in order: the notification first, so that a `needs_login` hook that
    /// has run implies its notification has.
    func jobs(for event: Event) -> [Job] {
        let name = event.event.rawValue
        let (argv, notify) = settings.withLock { ($0.hooks[name], $0.notify) }
        var jobEnvironment = environment
        jobEnvironment["TOKEND_EVENT"] = name
        jobEnvironment["TOKEND_ACCOUNT"] = event.account ?? ""
        var jobs: [Job] = []
        if notify, event.event == .needsLogin, let account = event.account, let argv = notifier.notification(for: account) {
            jobs.append(Job(label: "notification", argv: argv, environment: jobEnvironment))
        }
        if let argv {
            jobs.append(Job(label: "hook", argv: argv, environment: jobEnvironment))
        }
        return jobs
    }

    /// Kills every hook still running, with its process group (daemon shutdown).
    func killRunning() {
        running.killAll()
    }

    private func execute(_ job: Job, event: String) async {
        let account = job.environment["TOKEND_ACCOUNT"] ?? ""
        let metadata: Logger.Metadata = ["event": "\(event)", "account": "\(account)", "command": "\(job.argv[0])"]
        let outcome = await HookProcess.run(job.argv, environment: job.environment, timeout: timeout, running: running)
        let output = String(decoding: outcome.output, as: UTF8.self)
        for line in output.split(separator: "\n") where !line.trimmed.isEmpty {
            logger.info("\(job.label) output: \(line)", metadata: metadata)
        }
        switch outcome.ending {
        case .exited(0):
            logger.debug("\(job.label) ran", metadata: metadata)
        case .exited(let status):
            logger.warning("\(job.label) failed with exit status \(status)", metadata: metadata)
        case .signalled(let signal):
            logger.warning("\(job.label) was killed by signal \(signal)", metadata: metadata)
        case .timedOut:
            logger.warning("\(job.label) took longer than \(Int(saturating: timeout)) s and was killed", metadata: metadata)
        case .notStarted(let error):
            logger.error("\(job.label) could not be started: \(String(cString: strerror(error)))", metadata: metadata)
        }
    }
}
