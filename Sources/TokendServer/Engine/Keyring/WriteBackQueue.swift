import TokendCore

/// Which account's deferred write-back goes to the keyring next, and when (docs/architecture.md,
/// "Keyring write-back"). gnome-keyring rewrites its whole collection file on every store:
/// about 5 ms plus 0.06 ms per stored item, over half a second at 10,000 accounts, so writing
/// every refreshed ID token back cannot keep up. A refresh token that rotated is still written
/// at once (it is never here); what waits here is only newer ID and access tokens, which a
/// restart would otherwise get with one more refresh. Pure: clocked from outside.
struct WriteBackQueue {
    /// An account's ID and access tokens are written back at most this often: with hour-long
    /// tokens refreshed every 55 minutes that is every refresh, and the keyring then holds a
    /// token alive for most of its life.
    static let perAccountInterval: Double = 15 * 60
    /// Background writes one after another, each waiting twice as long as the last took (at
    /// least a second): the keyring spends at most a third of its time on them, whatever the
    /// number of accounts, and answers the writes that cannot wait without a queue in front.
    static let minimumSpacing: Double = 1

    /// Accounts waiting, with the instant each may be written: its per-account interval spent.
    private(set) var waiting: [String: Date] = [:]
    private var lastWritten: [String: Date] = [:]
    /// The next background write may start then.
    private(set) var nextAllowed: Date = .distantPast

    var isEmpty: Bool { waiting.isEmpty }

    /// `name`'s held tokens are newer than its stored ones since `now`.
    mutating func queue(_ name: String, at now: Date) {
        guard waiting[name] == nil else { return }
        waiting[name] = max(now, lastWritten[name].map { $0.addingTimeInterval(Self.perAccountInterval) } ?? now)
    }

    /// When the next write may start: the earliest due account, after the spacing.
    var nextDue: Date? {
        waiting.values.min().map { max($0, nextAllowed) }
    }

    /// The account to write now (the longest due; ties by name), taken off the queue; nil if none
    /// may go yet.
    mutating func take(at now: Date) -> String? {
        guard nextAllowed <= now, let (name, due) = waiting.min(by: { ($0.value, $0.key) < ($1.value, $1.key) }), due <= now else { return nil }
        waiting[name] = nil
        return name
    }

    /// A write of `name` ran from `started` to `finished` (whatever its result).
    mutating func wrote(_ name: String, started: Date, finished: Date) {
        lastWritten[name] = finished
        nextAllowed = finished.addingTimeInterval(max(Self.minimumSpacing, 2 * finished.timeIntervalSince(started)))
    }

    /// Takes `name` off the queue out of turn (the daemon's shutdown writes what waits at once).
    mutating func drop(_ name: String) {
        waiting[name] = nil
    }

    /// Every account still waiting, longest due first (the daemon's shutdown).
    var waitingInOrder: [String] {
        waiting.sorted { ($0.value, $0.key) < ($1.value, $1.key) }.map(\.key)
    }
}
