// Daemon/ — the process: `Daemon` builds configuration, keyring, engine, listener, hooks and
// timers, runs them under swift-service-lifecycle, and speaks to systemd (READY/RELOADING/
// STOPPING, the watchdog, socket activation) and the journal. The only folder that wires the
// others together.

import CTokendShims
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle
import Synchronization
import TokendCore
import TokendFleet
import TokendKeyring
import TokendProtocol
import TokendProviders
import TokendProxy
import TokendSystem
#if canImport(Glibc)
import Glibc
#endif

/// What the daemon needs to know from its command line and environment.
public struct DaemonOptions: Sendable {
    public var socketPath: String?
    public var configPath: String?
    public var environment: [String: String]
    public var keyringTimeout: Double

    /// Five seconds: a healthy gnome-keyring answers in milliseconds; past this it is treated as
    /// unavailable and sessions stay in memory, so the socket never waits on it for long.
    public static let defaultKeyringTimeout: Double = 5

    public init(socketPath: String? = nil, configPath: String? = nil, environment: [String: String], keyringTimeout: Double = defaultKeyringTimeout) {
        self.socketPath = socketPath
        self.configPath = configPath
        self.environment = environment
        self.keyringTimeout = keyringTimeout
    }
}

/// The parts of a daemon that touch the world, each replaceable by a test: nil means the real one.
/// Tests pass a `ManualClock` as clock and timers, a transport on that clock, an in-memory store.
public struct DaemonParts: Sendable {
    /// Every "now" of the engine, hooks and token files. Real: `ForwardClock` on the system clocks.
    public var clock: (any WallClock)?
    /// Every timer the engine arms. Real: `SystemTimerSource` on `clock`.
    public var timers: (any TimerSource)?
    /// The providers' HTTP client, shut down by the daemon when it stops. Real: one on the
    /// options' environment (its proxy settings), on `clock` and `timers` when those are given.
    public var transport: HTTPTransport?
    /// The keyring. Real: libsecret, with the options' keyring timeout.
    public var store: (any SecretStore)?

    public init(clock: (any WallClock)? = nil, timers: (any TimerSource)? = nil, transport: HTTPTransport? = nil, store: (any SecretStore)? = nil) {
        self.clock = clock
        self.timers = timers
        self.transport = transport
        self.store = store
    }
}

/// Failures that stop the daemon from starting; `main` turns the code into an exit status.
public struct DaemonError: Error, Sendable, CustomStringConvertible {
    public enum Code: Sendable { case socket, alreadyRunning }
    public var code: Code
    public var description: String
}

/// The whole daemon, assembled: what `tokend`'s main runs and what tests start in-process.
public final class Daemon: Service, Sendable {
    public static let version = tokendVersion

    public let socketPath: String
    public let configPath: String
    public let engine: AccountEngine
    public let hub: EventHub
    let hooks: HookRunner
    /// The consumers' HTTP proxies (Proxy/, TokendProxy): started and stopped by `ProxyService`.
    let proxies: ProxySupervisor
    /// The proxies' records in the audit, and their consumers' `unit` rule.
    let proxyAccess: ProxyAccessLog
    let listener: SocketListener
    /// `[consumer.NAME]`'s sockets, served beside the main one (Connections/ConsumerSockets.swift).
    let consumers: ConsumerSockets
    /// Every served token, refusal and management call (Audit/).
    public let audit: AuditLog
    let transport: HTTPTransport
    let store: any SecretStore
    /// The fleet member, once `[fleet]` is read, and the accounts that go through it (Daemon+Fleet.swift).
    let fleet: FleetBinding
    let idleMemory: IdleMemory
    /// SIGHUP's reloads and the `reload` op's, one at a time (`ReloadService` runs them).
    let reloads: ReloadQueue
    /// The STATUS= line systemd last got, so that only changes are sent.
    let lastStatus = Mutex("")
    let logger: Logger
    let options: DaemonOptions
    /// False only for a daemon a test runs in its own process: no process-wide hardening, and no
    /// idle release of the process's pages.
    let hardensProcess: Bool
    /// Told each step of the daemon's life as it happens (tests assert the shutdown order).
    let lifecycle: @Sendable (LifecycleStep) -> Void

    /// Builds every part (Hummingbird's template: `tokend`'s main and the tests that start a
    /// daemon in-process call this same function; `DaemonLifecycleTests` does, on a manual clock).
    public static func build(_ options: DaemonOptions, logger: Logger, parts: DaemonParts = DaemonParts()) throws(DaemonError) -> Daemon {
        try build(options, logger: logger, parts: parts, hardensProcess: true, lifecycle: { _ in })
    }

    /// `build`, for a daemon a test runs inside its own process: `hardensProcess` false leaves the
    /// test process dumpable, its limits and its memory alone; `lifecycle` hears each step as it happens.
    static func build(
        _ options: DaemonOptions, logger: Logger, parts: DaemonParts,
        hardensProcess: Bool, lifecycle: @escaping @Sendable (LifecycleStep) -> Void
    ) throws(DaemonError) -> Daemon {
        let socketPath: String
        do {
            socketPath = try SocketPath.resolve(explicit: options.socketPath, environment: Environment(options.environment))
        } catch {
            throw DaemonError(code: .socket, description: error.description)
        }
        let clock = parts.clock ?? ForwardClock()
        let timers = parts.timers ?? SystemTimerSource(clock: clock)
        // The transport's own default clock (the system's) unless the test gave one: as before parts existed.
        let transport = parts.transport ?? (parts.clock == nil
            ? HTTPTransport(environment: options.environment)
            : HTTPTransport(environment: options.environment, clock: clock, timers: timers))
        return Daemon(
            options: options, socketPath: socketPath, logger: logger, clock: clock, timers: timers, transport: transport,
            store: parts.store ?? StoreRouter(timeout: options.keyringTimeout, record: StoreRecordFile(environment: options.environment)),
            hardensProcess: hardensProcess, lifecycle: lifecycle)
    }

    private init(
        options: DaemonOptions, socketPath: String, logger: Logger, clock: any WallClock, timers: any TimerSource, transport: HTTPTransport,
        store: any SecretStore, hardensProcess: Bool, lifecycle: @escaping @Sendable (LifecycleStep) -> Void
    ) {
        self.options = options
        self.hardensProcess = hardensProcess
        self.lifecycle = lifecycle
        self.socketPath = socketPath
        self.configPath = Configuration.defaultPath(explicit: options.configPath, environment: options.environment)
        self.logger = logger
        let hub = EventHub()
        self.hub = hub
        self.transport = transport
        self.store = store
        let fleet = FleetBinding()
        self.fleet = fleet
        // A fleet account's session is the fleet's (FleetStore); every other account's goes
        // straight to the local store, as without a fleet.
        self.engine = AccountEngine(store: BootAnchoredStore(FleetStore(store, binding: fleet), clock: clock), clock: clock, timers: timers, hub: hub, logger: logger) { configuration in
            Self.provider(for: configuration, transport: transport, fleet: fleet)
        }
        engine.tokenFiles.hold()  // until `prepare` finds the socket ours
        self.hooks = HookRunner(environment: options.environment, clock: engine.clock, logger: logger)
        // The release pages out every file mapping of the process: a test process's is not ours.
        let idleMemory = hardensProcess
            ? IdleMemory(clock: engine.clock, timers: engine.timers, logger: logger)
            : IdleMemory(clock: engine.clock, timers: engine.timers, logger: logger, hand: {})
        self.idleMemory = idleMemory
        let reloads = ReloadQueue()
        self.reloads = reloads
        let environment = Environment(options.environment)
        let audit = AuditLog(
            directory: AuditRecord.directory(environment: environment), journal: JournaldLogHandler.stderrIsJournal(options.environment),
            // The system's clock unless a test gave one: one clock read per record on the listening
            // thread, where the engine's ForwardClock takes two and a lock.
            clock: engine.clock is ForwardClock ? SystemWallClock() : engine.clock, logger: logger)
        self.audit = audit
        let proxyAccess = ProxyAccessLog(audit: audit)
        self.proxyAccess = proxyAccess
        self.proxies = ProxySupervisor(tokens: EngineProxyTokens(commands: engine.commands), audit: proxyAccess, logger: logger)
        let router = RequestRouter(engine: engine, hub: hub, version: Self.version, configuration: reloads, audit: audit)
        self.listener = SocketListener(handler: router, logger: logger, onConnection: { idleMemory.noteWork() })
        self.consumers = ConsumerSockets(router: router, logger: logger, onConnection: { idleMemory.noteWork() })
    }

    static func provider(for configuration: AccountConfiguration, transport: HTTPTransport, fleet: FleetBinding? = nil) -> any TokenProvider {
        let provider = configuration.provider.base.makeProvider(transport: transport)
        // Only the holder of the account's election refreshes it (TokendFleet, FleetMember.refresh).
        guard configuration.fleet, let member = fleet?.member else { return provider }
        return FleetProvider(provider, member: member, account: configuration.name)
    }


    /// Serves until SIGTERM/SIGINT. The daemon's long-lived pieces run as services of one
    /// `ServiceGroup`, shut down one after another in reverse order of `services`: the listener
    /// stops accepting and its connections end; then SIGHUP reloads, the watchdog, the status
    /// line and the hooks stop; the engine goes last, so a refresh in flight still reaches the
    /// keyring. Nothing the daemon starts outlives this call.
    public func run() async throws {
        let prepared: Prepared
        do {
            prepared = try await prepare()
        } catch {
            await finish()
            throw error
        }
        logger.info("tokend \(Self.version) listening", metadata: [
            "socket": "\(socketPath)", "config": "\(configPath)", "accounts": "\(prepared.added.joined(separator: ","))",
            "activated": "\(prepared.activatedDescriptor != nil)",
        ])
        var services: [any Service] = [EngineService(daemon: self), HookService(daemon: self, events: prepared.hookEvents)]
        services.append(StatusLineService(daemon: self))
        if let interval = SystemdIntegration.watchdogInterval(environment: options.environment) {
            services.append(WatchdogService(daemon: self, interval: interval))
        }
        services.append(ReloadService(daemon: self, hangups: prepared.hangups))
        services.append(ProxyService(daemon: self))
        services.append(ListenerService(daemon: self, activatedDescriptor: prepared.activatedDescriptor, restoring: prepared.added))
        // No signals of its own: the group is shut down by the one that runs the daemon (tokend's
        // main, on SIGTERM/SIGINT), or cancelled with it.
        let group = ServiceGroup(configuration: .init(services: services, logger: logger))
        try await group.run()
    }

    /// What `run` sets up before any service starts.
    struct Prepared: Sendable {
        var added: [String]
        var hookEvents: AsyncStream<Event>
        var activatedDescriptor: CInt?
        var hangups: AsyncStream<Void>
    }

    func prepare() async throws -> Prepared {
        if hardensProcess {
            hardenProcess()
            Self.raiseDescriptorLimit()
            signal(SIGPIPE, SIG_IGN)
        }
        // A broken file still starts the daemon (`loadConfiguration` says why): nothing to add.
        let loaded = (try? await loadConfiguration(initial: true).get()) ?? LoadedConfiguration()
        // Subscribed before the listener starts: no event of a request can slip past the hooks.
        let hookEvents = hub.subscribe(account: nil)
        // With an activated socket, never bind one of our own: two sockets would be two daemons.
        let activated = try SystemdIntegration.activatedDescriptor(environment: options.environment)
        if activated == nil {
            do {
                try SocketListener.prepare(path: socketPath)
            } catch {
                throw DaemonError(code: error.code == .alreadyRunning ? .alreadyRunning : .socket, description: error.description)
            }
        }
        // Only once the socket is this process's (or systemd's, handed over): the files of a
        // daemon still serving it are its own, and a start refused above changes nothing on disk.
        engine.tokenFiles.start(removingLeftoversIn: TokenFileDirectory.path(environment: options.environment), keeping: loaded.tokenFiles)
        // The consumers' sockets too, once the main one is ours (a refused start touches none).
        let activatedConsumers = try SystemdIntegration.activatedConsumerDescriptors(environment: options.environment)
        consumers.take(activated: activatedConsumers)
        if let configuration = loaded.configuration { await consumers.apply(configuration, mainSocket: socketPath) }
        return Prepared(added: loaded.added, hookEvents: hookEvents, activatedDescriptor: activated, hangups: Self.hangups())
    }

    /// SIGHUP, as a stream: the signal's default action (exit) is replaced before the socket
    /// listens. Hangups that arrive during a reload are coalesced into one more reload.
    static func hangups() -> AsyncStream<Void> {
        ProcessSignals.shared.stream(of: [SIGHUP])
    }

    /// The end of every run: running hooks are killed, timers stop, token files go (nothing will
    /// refresh them), then whatever keyring write is in flight completes (the keyring thread
    /// runs jobs in order, so one more call returns after all earlier ones, or after the keyring
    /// timeout), then HTTP shuts down.
    func finish() async {
        idleMemory.cancel()
        hooks.killRunning()
        await proxies.stop()  // already stopped by its service, unless the run failed first
        await engine.shutdown()
        engine.tokenFiles.removeAll()
        await engine.writeBackBeforeStopping()
        await fleet.member?.stop()
        _ = await store.state()
        await transport.shutdown()  // AsyncHTTPClient traps if its client is dropped unshut
        audit.stop()  // what is pending is written first
    }

    /// Graceful shutdown's first step: systemd hears STOPPING, no new client is accepted, and
    /// every open connection is closed.
    func stopAccepting() {
        SystemdIntegration.notify("STOPPING=1\nSTATUS=stopping", environment: options.environment)
        logger.info("shutting down")
        listener.stop()
        consumers.stop()
        lifecycle(.stoppedAccepting)
    }

    /// READY=1 once the socket listens and the keyring has been tried: every stored session
    /// read, or the keyring's timeout spent on them (a frozen Secret Service must not hold
    /// readiness past systemd's start timeout; the reads go on in the background).
    func startRestoring(_ names: [String]) async {
        let engine = engine
        let readyBy = engine.clock.now().addingTimeInterval(options.keyringTimeout)
        await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                await engine.keyring.restore(names)
                return true
            }
            group.addTask {
                _ = await engine.timers.sleep(until: readyBy)
                return false
            }
            if await group.next() == true { group.cancelAll() }
            let summary = await engine.statusSummary()
            SystemdIntegration.notify("READY=1\nSTATUS=\(summary)", environment: options.environment)
            lastStatus.withLock { $0 = summary }
            lifecycle(.ready)
        }
        await updateStatus()
        idleMemory.release()  // start-up is over: what it touched need not stay
    }

    /// Keeps systemd's STATUS= current: re-summarised after every event (refresh, failure, login
    /// needed, keyring locked or back, reload), sent only when the line changed.
    func publishStatus() async {
        for await _ in hub.subscribe(account: nil) {
            idleMemory.noteWork()
            await updateStatus()
        }
    }

    func updateStatus() async {
        let summary = await engine.statusSummary()
        let changed = lastStatus.withLock { last in
            defer { last = summary }
            return last != summary
        }
        if changed { SystemdIntegration.notify("STATUS=\(summary)", environment: options.environment) }
    }

    /// WATCHDOG=1 only when each part that serves clients has just answered: every NIO event
    /// loop (sockets), the engine actor (requests, refreshes) and the timer thread (proactive
    /// refreshes; the wait for each interval is one of its timers). If any one is wedged the
    /// ping stops and systemd restarts the daemon.
    func feedWatchdog(every interval: Double) async {
        // Ends when the task is cancelled (graceful shutdown), without one last ping.
        while await engine.timers.sleep(until: engine.clock.now().addingTimeInterval(interval)) {
            for loop in MultiThreadedEventLoopGroup.singleton.makeIterator() {
                try? await loop.submit {}.get()
            }
            await updateStatus()  // the status line also ages: "active" turns "stale" with time
            SystemdIntegration.notify("WATCHDOG=1", environment: options.environment)
        }
    }
}
