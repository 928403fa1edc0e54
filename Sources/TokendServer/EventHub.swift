import Synchronization
import TokendCore
import TokendProtocol

/// Fans account events out to `watch` subscribers. A subscriber that does not keep up loses old
/// events rather than growing the daemon's memory: each stream buffers at most `bufferLimit`.
public final class EventHub: Sendable {
    /// Events are small and rare (a few per account per hour); 256 covers any burst a slow reader
    /// can reasonably fall behind by.
    static let bufferLimit = 256

    private struct Subscriber {
        var account: String?
        var continuation: AsyncStream<Event>.Continuation
    }

    private let subscribers = Mutex<[UInt64: Subscriber]>([:])
    private let nextID = Atomic<UInt64>(0)

    public init() {}

    /// A stream of events for one account, or all when `account` is nil.
    public func subscribe(account: String?) -> AsyncStream<Event> {
        let id = nextID.add(1, ordering: .relaxed).newValue
        let (stream, continuation) = AsyncStream<Event>.makeStream(bufferingPolicy: .bufferingNewest(Self.bufferLimit))
        continuation.onTermination = { [weak self] _ in
            self?.subscribers.withLock { _ = $0.removeValue(forKey: id) }
        }
        subscribers.withLock { $0[id] = Subscriber(account: account, continuation: continuation) }
        return stream
    }

    public func publish(_ event: Event) {
        let targets = subscribers.withLock { subscribers in
            subscribers.values.filter { $0.account == nil || event.account == nil || $0.account == event.account }.map(\.continuation)
        }
        for continuation in targets { continuation.yield(event) }
    }

    public var subscriberCount: Int { subscribers.withLock { $0.count } }

    /// Ends every stream (daemon shutdown), so `watch` connections close cleanly.
    public func finishAll() {
        let all = subscribers.withLock { subscribers in
            defer { subscribers.removeAll() }
            return subscribers.values.map(\.continuation)
        }
        for continuation in all { continuation.finish() }
    }
}
