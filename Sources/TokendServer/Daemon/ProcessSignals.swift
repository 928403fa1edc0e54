import CTokendShims
import Glibc
import Synchronization
import TokendCore
import TokendSystem

/// The signals the daemon acts on (SIGTERM and SIGINT stop it, SIGHUP reloads), as streams. Each
/// is forwarded to the process's signal pipe (`tokend_forward_signal`), which one thread of its
/// own reads: it sleeps in `read` until a signal comes. No libdispatch signal source: once a
/// Dispatch worker has run, libdispatch wakes every second (`TimerThread`).
public final class ProcessSignals: Sendable {
    public static let shared = ProcessSignals()

    private struct State {
        var subscribers: [Int32: [UInt64: AsyncStream<Void>.Continuation]] = [:]
        var nextID: UInt64 = 0
        var reading = false
    }

    private let state = Mutex(State())

    private init() {}

    /// Each arrival of one of `signals` from now on; arrivals while the consumer is busy are
    /// coalesced into one. The signals' actions are replaced before this returns.
    public func stream(of signals: [Int32]) -> AsyncStream<Void> {
        let (stream, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let startReading = state.withLock { state in
            let id = state.nextID
            state.nextID += 1
            for signal in signals { state.subscribers[signal, default: [:]][id] = continuation }
            continuation.onTermination = { [self] _ in
                self.state.withLock { state in
                    for signal in signals { state.subscribers[signal]?[id] = nil }
                }
            }
            defer { state.reading = true }
            return !state.reading
        }
        if startReading {
            let pipe = tokend_signal_pipe()
            DedicatedThread.start("tokend-signals") { [self] in read(pipe) }
        }
        for signal in signals { _ = tokend_forward_signal(signal) }
        return stream
    }

    private func read(_ pipe: Int32) {
        var byte: UInt8 = 0
        while true {
            let count = Glibc.read(pipe, &byte, 1)
            if count < 0, errno == EINTR { continue }
            guard count == 1 else { return }  // no pipe (-1): nothing will ever arrive
            let signal = Int32(byte)  // conversion: UInt8 always fits
            let subscribers = state.withLock { Array(($0.subscribers[signal] ?? [:]).values) }
            for subscriber in subscribers { subscriber.yield() }
        }
    }
}
