import Synchronization
import TokendCore
#if canImport(Glibc)
import Glibc
#endif

/// The desktop notification on `needs_login`: through `notify-send` when it is on PATH and there
/// is a display, at most once per `interval` per account — a refresh token that keeps failing
/// must not pop up a window every few minutes.
final class DesktopNotifier: Sendable {
    /// An hour: the user who ignored the first notice gets reminded, not nagged.
    static let defaultInterval: Double = 3600

    private let environment: [String: String]
    private let clock: any WallClock
    private let interval: Double
    private let lastSent = Mutex<[String: Date]>([:])

    init(environment: [String: String], clock: any WallClock, interval: Double = defaultInterval) {
        self.environment = environment
        self.clock = clock
        self.interval = interval
    }

    /// The notify-send command for `account`, or nil: no display, no notify-send, or one was
    /// sent within the interval.
    func notification(for account: String) -> [String]? {
        guard hasDisplay, let program = Self.find("notify-send", path: environment["PATH"]) else { return nil }
        let now = clock.now()
        let due = lastSent.withLock { sent in
            if let last = sent[account], now.timeIntervalSince(last) < interval, now >= last { return false }
            sent[account] = now
            return true
        }
        guard due else { return nil }
        return [
            // `--` ends the options: an account may be named `-x`, which is not an option.
            program, "--app-name=tokend", "--urgency=normal", "--",
            "\(account) needs you to sign in again", "\(account) needs you to sign in again: tokenctl login \(account)",
        ]
    }

    /// X11 or Wayland: without either, nobody is looking at a screen to notify.
    var hasDisplay: Bool {
        !(environment["DISPLAY"] ?? "").isEmpty || !(environment["WAYLAND_DISPLAY"] ?? "").isEmpty
    }

    /// `program` in the directories of `path`, when one of them holds it as an executable.
    static func find(_ program: String, path: String?) -> String? {
        for directory in (path ?? "/usr/local/bin:/usr/bin:/bin").split(separator: ":") where !directory.isEmpty {
            let candidate = "\(directory)/\(program)"
            if access(candidate, X_OK) == 0 { return candidate }
        }
        return nil
    }
}
