import ServiceLifecycle
import TokendProtocol
#if canImport(Glibc)
import Glibc
#endif

/// The steps of a daemon's life that tests watch: ready, then each piece as it stops, in order.
enum LifecycleStep: Sendable, Equatable {
    case ready
    case stoppedAccepting, requestsReleased, connectionsClosed, reloadsStopped, watchdogStopped, statusLineStopped, hooksStopped, engineStopped
}

// The daemon's long-lived pieces, each a `Service` of the daemon's group (`Daemon.run`). Each one
// runs until the group's graceful shutdown reaches it, then stops and returns.

/// The socket: serves until graceful shutdown stops it, then returns once every connection has
/// ended. Once it listens, the stored sessions are read (the socket never waits on the keyring).
/// Once it stops, the engine takes no new work and answers the requests waiting on it that
/// tokend is stopping, so no connection waits for a refresh.
struct ListenerService: Service {
    let daemon: Daemon
    let activatedDescriptor: CInt?
    let restoring: [String]

    func run() async throws {
        let (listening, listened) = AsyncStream.makeStream(of: Void.self)
        let (stopping, stopped) = AsyncStream.makeStream(of: Void.self)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                try await withGracefulShutdownHandler {
                    try await daemon.listener.run(path: daemon.socketPath, activatedDescriptor: activatedDescriptor) { listened.finish() }
                } onGracefulShutdown: {
                    daemon.stopAccepting()
                    stopped.finish()
                }
            }
            group.addTask {
                // Also when the listener failed: the group is cancelled and the engine stops.
                for await _ in stopping {}
                await daemon.engine.shutdown()
                daemon.lifecycle(.requestsReleased)
            }
            group.addTask {
                for await _ in listening {}
                // A keyring that hangs must not hold the shutdown: the reads are abandoned.
                guard !Task.isCancelled else { return }
                await cancelWhenGracefulShutdown { await daemon.startRestoring(restoring) }
            }
            try await group.waitForAll()
        }
        if activatedDescriptor == nil { unlink(daemon.socketPath) }
        await daemon.consumers.finish()
        daemon.lifecycle(.connectionsClosed)
    }
}

/// Re-reads the configuration on SIGHUP and on the `reload` op, one reload at a time
/// (`ReloadQueue`). Once it stops, a `reload` still waiting is told that tokend is stopping.
struct ReloadService: Service {
    let daemon: Daemon
    let hangups: AsyncStream<Void>

    func run() async {
        await cancelWhenGracefulShutdown {
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    for await _ in hangups { daemon.reloads.request() }
                }
                group.addTask {
                    await daemon.reloads.run { await daemon.reload() }
                }
                await group.waitForAll()
            }
        }
        daemon.lifecycle(.reloadsStopped)
    }
}

/// WATCHDOG=1 to systemd while every part that serves clients answers.
struct WatchdogService: Service {
    let daemon: Daemon
    /// Seconds between pings.
    let interval: Double

    func run() async {
        await cancelWhenGracefulShutdown { await daemon.feedWatchdog(every: interval) }
        daemon.lifecycle(.watchdogStopped)
    }
}

/// systemd's STATUS= line, kept current from the daemon's events.
struct StatusLineService: Service {
    let daemon: Daemon

    func run() async {
        await cancelWhenGracefulShutdown { await daemon.publishStatus() }
        // The events end early when the engine stops; the service still ends only in its turn.
        try? await gracefulShutdown()
        daemon.lifecycle(.statusLineStopped)
    }
}

/// The `[hooks]` commands and desktop notifications. At shutdown running hooks are killed (they
/// are in process groups of their own) and queued ones dropped.
struct HookService: Service {
    let daemon: Daemon
    let events: AsyncStream<Event>

    func run() async {
        await withGracefulShutdownHandler {
            await cancelWhenGracefulShutdown { await daemon.hooks.run(events) }
        } onGracefulShutdown: {
            daemon.hooks.killRunning()
        }
        // The events end early when the engine stops; the service still ends only in its turn.
        try? await gracefulShutdown()
        daemon.lifecycle(.hooksStopped)
    }
}

/// The engine's end, last of all: whatever keyring write is in flight completes and HTTP shuts
/// down (the engine stopped taking work when the listener stopped).
struct EngineService: Service {
    let daemon: Daemon

    func run() async {
        // Cancelled (the group failed) or shut down gracefully: the engine stops either way.
        try? await gracefulShutdown()
        await daemon.finish()
        daemon.lifecycle(.engineStopped)
    }
}
