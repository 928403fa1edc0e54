import Synchronization
import TokendCore
import TokendProtocol

/// Fans events out to `watch` subscribers, hooks and systemd's status line: the wire's `Event`,
/// the one type an event has from the engine to the socket. A subscriber that does not keep up loses old
/// events rather than growing the daemon's memory: each stream buffers at most `bufferLimit`.
public final class EventHub: Sendable {
    /// Events are small and rare (a few per account per hour); 256 covers any burst a slow reader
    /// can reasonably fall behind by.
    static let bufferLimit = 256

    private struct Subscriber {
        var account: String?
        /// Which accounts' events this subscriber may see (a consumer's `watch`); nil: all.
        var visible: (@Sendable (String) -> Bool)?
        var deliver: @Sendable (Event) -> Void
        var finish: @Sendable () -> Void
    }

    private let subscribers = Mutex<[UInt64: Subscriber]>([:])
    private let nextID = Atomic<UInt64>(0)

    public init() {}

    /// A stream of events for one account, or all when `account` is nil.
    public func subscribe(account: String?) -> AsyncStream<Event> {
        subscribe(account: account, first: nil) { $0 }
    }

    /// A stream that starts with `first` and then carries each event as `wrap` makes it: what a
    /// `watch` connection writes. No task in between, so the subscription ends the moment the
    /// stream is dropped.
    func subscribe<Element: Sendable>(
        account: String?, first: Element?, visible: (@Sendable (String) -> Bool)? = nil, _ wrap: @escaping @Sendable (Event) -> Element
    ) -> AsyncStream<Element> {
        let id = nextID.add(1, ordering: .relaxed).newValue
        let (stream, continuation) = AsyncStream<Element>.makeStream(bufferingPolicy: .bufferingNewest(Self.bufferLimit))
        if let first { continuation.yield(first) }
        continuation.onTermination = { [weak self] _ in
            self?.subscribers.withLock { _ = $0.removeValue(forKey: id) }
        }
        let subscriber = Subscriber(account: account, visible: visible, deliver: { continuation.yield(wrap($0)) }, finish: { continuation.finish() })
        subscribers.withLock { $0[id] = subscriber }
        return stream
    }

    public func publish(_ event: Event) {
        let targets = subscribers.withLock { subscribers in
            subscribers.values.filter { subscriber in
                guard let account = event.account else { return true }
                return (subscriber.account == nil || subscriber.account == account) && subscriber.visible?(account) != false
            }.map(\.deliver)
        }
        for deliver in targets { deliver(event) }
    }

    public var subscriberCount: Int { subscribers.withLock { $0.count } }

    /// Ends every stream (daemon shutdown), so `watch` connections close cleanly.
    public func finishAll() {
        let all = subscribers.withLock { subscribers in
            defer { subscribers.removeAll() }
            return subscribers.values.map(\.finish)
        }
        for finish in all { finish() }
    }
}

extension Event {
    /// An event about `account` (nil: about every account, as the keyring's mood) at `at`.
    init(_ kind: Kind, account: String?, at: Date) {
        self.init(event: kind, account: account, at: Timestamp.format(at))
    }

    /// The line `watch` writes: the email only for a client that asked for the profile.
    func forWatcher(profile: Bool) -> Event {
        var line = self
        if !profile { line.email = nil }
        return line
    }
}
