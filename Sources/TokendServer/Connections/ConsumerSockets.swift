import Logging
import Synchronization
import TokendCore
import TokendProtocol
#if canImport(Glibc)
import Glibc
#endif

/// The consumers' sockets (issue 49 item 1; README, "Consumers"): one `SocketListener` per
/// `[consumer.NAME]` with a `socket`, serving the daemon's router behind the consumer's
/// `ConsumerGate`. Created (0600, in a directory of ours) when the configuration names them,
/// at start and on every reload; a reload that changes a policy updates its gate in place (open
/// connections follow from their next line), one that moves or drops a socket stops it and
/// removes the file; the daemon's stop stops them all. A socket systemd passed
/// (`FileDescriptorName=consumer-NAME`) is served as passed and never removed: it is systemd's.
final class ConsumerSockets: Sendable {
    struct Serving: Sendable {
        var path: String
        var gate: ConsumerGate
        var listener: SocketListener
        var task: Task<Void, Never>
        var activated: Bool
    }

    /// The name systemd gives a consumer's socket: `FileDescriptorName=consumer-NAME`.
    static func descriptorName(_ consumer: String) -> String { "consumer-\(consumer)" }

    private let serving = Mutex<[String: Serving]>([:])
    /// Set by `stop()`: a reload after it starts nothing.
    private let stopped = Mutex(false)
    /// Descriptors systemd passed, by consumer name; each is taken once.
    private let activated: Mutex<[String: CInt]>
    private let router: RequestRouter
    private let logger: Logger
    private let onConnection: @Sendable () -> Void

    init(router: RequestRouter, activated: [String: CInt] = [:], logger: Logger, onConnection: @escaping @Sendable () -> Void = {}) {
        self.router = router
        self.activated = Mutex(activated)
        self.logger = logger
        self.onConnection = onConnection
    }

    /// The sockets systemd passed (`SystemdIntegration.activatedConsumerDescriptors`), once
    /// they are known, before the first `apply`.
    func take(activated descriptors: [String: CInt]) {
        activated.withLock { $0 = descriptors }
    }

    /// The socket paths served now, by consumer.
    var paths: [String: String] { serving.withLock { $0.mapValues(\.path) } }

    /// Serves what `configuration` names: new sockets listen before this returns.
    func apply(_ configuration: Configuration, mainSocket: String) async {
        let wanted = configuration.consumers.filter { $0.value.socket != nil }
        let kinds = configuration.accounts.mapValues(\.defaultTokenKind)
        var ending: [Serving] = []
        var starting: [ConsumerPolicy] = []
        serving.withLock { serving in
            for (name, current) in serving where wanted[name]?.socket != current.path {
                ending.append(current)
                serving.removeValue(forKey: name)
            }
            for (name, policy) in wanted.sorted(by: { $0.key < $1.key }) {
                let defaultKinds = kinds.filter { policy.accounts.contains($0.key) }
                if let current = serving[name] {
                    current.gate.update(policy: policy, defaultKinds: defaultKinds)
                } else {
                    starting.append(policy)
                }
            }
        }
        for old in ending { await end(old) }
        for policy in starting {
            guard !stopped.withLock({ $0 }), let path = policy.socket else { return }
            guard path != mainSocket else {
                logger.error("a consumer's socket cannot be the main socket; not serving it", metadata: ["consumer": "\(policy.name)", "socket": "\(path)"])
                continue
            }
            await start(policy, path: path, defaultKinds: kinds.filter { policy.accounts.contains($0.key) })
        }
    }

    private func start(_ policy: ConsumerPolicy, path: String, defaultKinds: [String: TokenKind]) async {
        let descriptor = activated.withLock { $0.removeValue(forKey: policy.name) }
        if descriptor == nil {
            do {
                try SocketListener.prepare(path: path)
            } catch {
                logger.error("cannot serve a consumer's socket", metadata: ["consumer": "\(policy.name)", "socket": "\(path)", "error": "\(error)"])
                return
            }
        }
        let gate = ConsumerGate(policy: policy, defaultKinds: defaultKinds)
        let listener = SocketListener(handler: router.scoped(to: gate), logger: logger, onConnection: onConnection)
        // One element once it listens; none when it could not.
        let (listening, listened) = AsyncStream.makeStream(of: Bool.self)
        let logger = logger
        let task = Task {
            do {
                try await listener.run(path: path, activatedDescriptor: descriptor) {
                    listened.yield(true)
                    listened.finish()
                }
            } catch {
                logger.error("cannot serve a consumer's socket", metadata: ["consumer": "\(policy.name)", "socket": "\(path)", "error": "\(error)"])
            }
            listened.finish()
        }
        var bound = false
        for await value in listening { bound = value }
        guard bound else { return }
        serving.withLock { $0[policy.name] = Serving(path: path, gate: gate, listener: listener, task: task, activated: descriptor != nil) }
        // A stop that came while it bound did not see it.
        if stopped.withLock({ $0 }) { listener.stop() }
        logger.info("serving a consumer's socket", metadata: ["consumer": "\(policy.name)", "socket": "\(path)", "activated": "\(descriptor != nil)"])
    }

    private func end(_ old: Serving) async {
        old.listener.stop()
        await old.task.value
        if !old.activated { unlink(old.path) }
        logger.info("stopped a consumer's socket", metadata: ["consumer": "\(old.gate.name)", "socket": "\(old.path)"])
    }

    /// Stops accepting on every consumer socket and closes their connections (graceful shutdown's
    /// first step, beside the main socket's).
    func stop() {
        stopped.withLock { $0 = true }
        for current in serving.withLock({ Array($0.values) }) { current.listener.stop() }
    }

    /// Once stopped: waits for each socket's connections to end and removes the files.
    func finish() async {
        let all = serving.withLock { serving in
            defer { serving.removeAll() }
            return Array(serving.values)
        }
        for current in all { await end(current) }
    }
}
