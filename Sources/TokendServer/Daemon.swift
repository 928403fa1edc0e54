import CTokendShims
import Dispatch
import Logging
import ServiceLifecycle
import TokendCore
import TokendKeyring
import TokendProtocol
import TokendProviders
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
    let listener: SocketListener
    let transport: HTTPTransport
    let logger: Logger
    let options: DaemonOptions

    /// Builds every part (Hummingbird's template: main and tests call the same function).
    public static func build(_ options: DaemonOptions, logger: Logger, store: (any SecretStore)? = nil) throws(DaemonError) -> Daemon {
        let socketPath: String
        do {
            socketPath = try SocketPath.resolve(explicit: options.socketPath, environment: options.environment)
        } catch {
            throw DaemonError(code: .socket, description: error.description)
        }
        return Daemon(options: options, socketPath: socketPath, logger: logger, store: store ?? LibsecretStore(timeout: options.keyringTimeout))
    }

    init(options: DaemonOptions, socketPath: String, logger: Logger, store: any SecretStore) {
        self.options = options
        self.socketPath = socketPath
        self.configPath = Configuration.defaultPath(explicit: options.configPath, environment: options.environment)
        self.logger = logger
        let hub = EventHub()
        let transport = HTTPTransport(environment: options.environment)
        self.hub = hub
        self.transport = transport
        self.engine = AccountEngine(store: store, hub: hub, logger: logger) { configuration in
            Self.provider(for: configuration, transport: transport)
        }
        self.hooks = HookRunner(environment: options.environment, clock: engine.clock, logger: logger)
        self.listener = SocketListener(handler: RequestHandler(engine: engine, hub: hub, version: Self.version), logger: logger)
    }

    static func provider(for configuration: AccountConfiguration, transport: HTTPTransport) -> any TokenProvider {
        switch configuration.provider {
        case .firebase(let apiKey, let emulatorHost):
            return FirebaseProvider(apiKey: apiKey, emulatorHost: emulatorHost, transport: transport)
        case .oidc:
            return UnsupportedProvider(kind: .oidc, reason: "OpenID Connect accounts are not supported by this version yet")
        }
    }

    /// Serves until SIGTERM/SIGINT (graceful: stop accepting, close connections, end watches).
    public func run() async throws {
        do {
            try await serve()
        } catch {
            await engine.shutdown()
            await transport.shutdown()  // AsyncHTTPClient traps if its client is dropped unshut
            throw error
        }
        await engine.shutdown()
        await transport.shutdown()
    }

    func serve() async throws {
        _ = tokend_set_not_dumpable()
        Self.raiseDescriptorLimit()
        signal(SIGPIPE, SIG_IGN)
        await loadConfiguration(initial: true)
        // Subscribed before the listener starts: no event of a request can slip past the hooks.
        let hookEvents = hub.subscribe(account: nil)
        Task { [hooks] in await hooks.run(hookEvents) }
        let activated = SystemdIntegration.activatedDescriptor(environment: options.environment)
        if activated == nil {
            do {
                try SocketListener.prepare(path: socketPath)
            } catch {
                throw DaemonError(code: error.code == .alreadyRunning ? .alreadyRunning : .socket, description: error.description)
            }
        }
        signal(SIGHUP, SIG_IGN)
        let hangup = DispatchSource.makeSignalSource(signal: SIGHUP, queue: .global())
        hangup.setEventHandler { [self] in
            Task { await self.reload() }
        }
        hangup.resume()
        defer { hangup.cancel() }
        let environment = options.environment
        let names = await engine.accountNames
        logger.info("tokend \(Self.version) listening", metadata: [
            "socket": "\(socketPath)", "config": "\(configPath)", "accounts": "\(names.joined(separator: ","))",
            "activated": "\(activated != nil)",
        ])
        try await withGracefulShutdownHandler {
            try await listener.run(path: socketPath, activatedDescriptor: activated) {
                SystemdIntegration.notify("READY=1\nSTATUS=serving \(names.count) account(s)", environment: environment)
            }
        } onGracefulShutdown: { [self] in
            SystemdIntegration.notify("STOPPING=1", environment: environment)
            logger.info("shutting down")
            listener.stop()
            Task { await engine.shutdown() }
        }
        if activated == nil { unlink(socketPath) }
    }

    /// Raises the soft descriptor limit to the hard one (often 1024 → 524288 under systemd), so
    /// that the listener's connection cap, not the kernel, is what turns a flood away.
    static func raiseDescriptorLimit() {
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < limit.rlim_max else { return }
        limit.rlim_cur = limit.rlim_max
        _ = setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
    }

    /// SIGHUP: re-read the configuration; a broken file keeps the last good one.
    public func reload() async {
        SystemdIntegration.notify("RELOADING=1", environment: options.environment)
        await loadConfiguration(initial: false)
        SystemdIntegration.notify("READY=1", environment: options.environment)
    }

    func loadConfiguration(initial: Bool) async {
        do {
            let configuration = try Configuration.load(path: configPath, environment: options.environment)
            await engine.setConfigurationProblem(nil)
            await engine.apply(configuration)
            hooks.apply(configuration)
            if !initial { logger.info("configuration reloaded", metadata: ["accounts": "\(configuration.accounts.count)"]) }
            hub.publish(Event(event: .configReloaded, account: nil, at: Timestamp.format(engine.clock.now())))
        } catch {
            if initial {
                // Start anyway: with socket activation, a daemon that exits is one that no client
                // can ask what is wrong. Every account request answers config_error with the reason.
                await engine.setConfigurationProblem(error)
                logger.error("configuration is broken; serving no accounts until it is fixed", metadata: ["error": "\(error)"])
            } else {
                logger.error("configuration is broken; keeping the last good one", metadata: ["error": "\(error)"])
            }
        }
    }
}

/// Stands in for a provider this build cannot talk to: every refresh is a configuration error.
struct UnsupportedProvider: TokenProvider {
    let kind: ProviderKind
    let reason: String

    func refresh(refreshToken: String) async -> RefreshOutcome {
        .misconfigured(RefreshFailure(code: "unsupported_provider", message: reason))
    }
}
