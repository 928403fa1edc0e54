import Logging
import Synchronization
import TokendCore

/// Keeps every account's token files in step with its servable tokens (docs/architecture.md,
/// "Token files"): a file holds a token only while that token has more than its `min_valid`
/// left. `AccountTable` calls `update` on every change of an account, inside the engine, and the
/// timer thread calls back at each removal instant. The file-system work runs right there, under
/// the lock: a write in our tmpfs directory is about a dozen system calls (0.14 ms measured, debug
/// build, 2 busy cores; once per refresh), and doing it in place keeps every path's writes in the order asked without a thread
/// or a queue (libdispatch is kept out of the daemon: docs/architecture.md, "Time").
public final class TokenFiles: Sendable {
    /// After a failed write or removal, the next try: soon enough that a file the user fixed
    /// (a directory chmod'ed back) is written again within the minute, rare enough not to spin.
    static let retryDelay: Double = 30

    private struct Account {
        var files: [TokenFile] = []
        var defaultKind: TokenKind = .id
        var tokens: TokenSet?
        /// The next instant a file must go (its token reaches `min_valid` left).
        var timer: TimerHandle?
    }

    private struct State {
        var accounts: [String: Account] = [:]
        /// What each path holds as far as this daemon knows: a token, or nothing (`""`). No
        /// entry: unknown (a file left by an earlier daemon, or a write that failed).
        var holds: [String: String] = [:]
        /// Which account's file each path is now, so that a path passed from one account to
        /// another by a reload is never removed by the account that gave it up.
        var owners: [String: String] = [:]
        /// The last failure per path, logged once rather than on every retry.
        var failures: [String: String] = [:]
        /// Paths whose tokens are born with no more than `min_valid` to live, said once: such a
        /// file stays empty whatever tokend does, and only a lower `min_valid` changes that.
        var tooShortLived: Set<String> = []
        var stopped = false
        /// Set by a daemon until its socket is its own (`hold`, `start`): a start refused because
        /// another tokend serves the socket writes and removes nothing, the files being that one's.
        var held = false
    }

    private let state = Mutex(State())
    private let clock: any WallClock
    private let timers: any TimerSource
    private let logger: Logger

    public init(clock: any WallClock, timers: any TimerSource, logger: Logger) {
        self.clock = clock
        self.timers = timers
        self.logger = logger
    }

    /// The account's token files now (none once it is gone from the configuration) and the tokens
    /// it would serve now.
    func update(_ account: String, files: [TokenFile], defaultKind: TokenKind, tokens: TokenSet?) {
        state.withLock { state in
            if files.isEmpty, state.accounts[account] == nil { return }  // the common case: no files
            var entry = state.accounts[account] ?? Account()
            for gone in entry.files where !files.contains(where: { $0.path == gone.path }) && state.owners[gone.path] == account {
                state.owners[gone.path] = nil
                settle(gone.path, to: nil, in: &state)
            }
            entry.files = files
            entry.defaultKind = defaultKind
            entry.tokens = tokens
            if files.isEmpty { entry.timer?.cancel() }
            state.accounts[account] = files.isEmpty ? nil : entry
            reconcile(account, in: &state)
        }
    }

    /// Touches no file until `start`: what a daemon calls before it knows its socket is its own.
    func hold() {
        state.withLock { $0.held = true }
    }

    /// Once the daemon owns its socket, before any account's file is written: removes every
    /// regular file in `directory` that none of `configured` (paths) names, and logs each; then
    /// writes what the accounts hold. Such a file was left by a daemon that could not remove it
    /// (killed, or stopped while a sink or an account it named was being dropped from the
    /// configuration), or is a temporary of a write cut short: it holds a token nobody refreshes.
    public func start(removingLeftoversIn directory: String?, keeping configured: [String]) {
        state.withLock { state in
            if let directory { removeLeftovers(in: directory, keeping: configured) }
            state.held = false
            for account in state.accounts.keys.sorted() { reconcile(account, in: &state) }
        }
    }

    /// Called under the lock, by `start`.
    private func removeLeftovers(in directory: String, keeping configured: [String]) {
        let names = Set(configured.map(TokenFile.split).filter { $0.directory == directory }.map(\.name))
        do throws(TokenFileWriter.Failure) {
            let (removed, failed) = try TokenFileWriter.removeFiles(in: directory, except: names)
            for name in removed {
                logger.notice("token file no sink names removed (left by an earlier run)", metadata: ["path": "\(directory)/\(name)"])
            }
            for name in failed {
                logger.error("token file no sink names could not be removed; remove it", metadata: ["path": "\(directory)/\(name)"])
            }
        } catch {
            logger.error("token files left by an earlier run not looked for: \(error.description)", metadata: ["path": "\(directory)"])
        }
    }

    /// Removes every file this daemon keeps and writes none after (daemon shutdown: no one will
    /// refresh them, so none may outlive it).
    public func removeAll() {
        state.withLock { state in
            state.stopped = true
            for (path, _) in state.owners { settle(path, to: nil, in: &state, evenStopped: true) }
            for account in state.accounts.values { account.timer?.cancel() }
            state.accounts.removeAll()
            state.owners.removeAll()
        }
    }

    /// Writes or removes each of the account's files as its tokens say, and arms the timer for
    /// the soonest removal.
    private func reconcile(_ account: String, in state: inout State) {
        guard var entry = state.accounts[account] else { return }
        entry.timer?.cancel()
        entry.timer = nil
        let now = clock.now()
        var next: Date?
        for file in entry.files {
            state.owners[file.path] = account
            if let lifetime = file.lifetime(of: entry.tokens, defaultKind: entry.defaultKind), lifetime <= file.minValid,
                state.tooShortLived.insert(file.path).inserted
            {
                let (lives, wanted) = (Int(lifetime), Int(file.minValid))  // conversion: lifetime is in (0, min_valid], at most 12 h
                logger.warning(
                    "token file stays empty: the provider's tokens live \(lives) s, no more than its min_valid (\(wanted) s); lower min_valid",
                    metadata: ["path": "\(file.path)", "account": "\(account)"])
            }
            let content = file.content(of: entry.tokens, defaultKind: entry.defaultKind, at: now)
            settle(file.path, to: content?.token, in: &state)
            if let removeAt = content?.removeAt { next = min(next ?? removeAt, removeAt) }
        }
        if let next, !state.stopped {
            entry.timer = timers.schedule(at: next) { [weak self] in self?.reconcile(account) }
        }
        state.accounts[account] = entry
    }

    private func reconcile(_ account: String) {
        state.withLock { reconcile(account, in: &$0) }
    }

    /// Writes (or, for nil, removes) `path` so that it holds `token`, unless it holds it already.
    /// A failure leaves the content unknown and tries again after `retryDelay` (a later change
    /// of the account tries sooner).
    private func settle(_ path: String, to token: String?, in state: inout State, evenStopped: Bool = false) {
        guard !state.held, !state.stopped || evenStopped, state.holds[path] != (token ?? "") else { return }
        let (directory, name) = TokenFile.split(path)
        do throws(TokenFileWriter.Failure) {
            if let token {
                try TokenFileWriter.write(token, named: name, in: directory)
                logger.debug("token file written", metadata: ["path": "\(path)"])
            } else {
                try TokenFileWriter.remove(named: name, in: directory)
            }
            state.holds[path] = token ?? ""
            if state.failures.removeValue(forKey: path) != nil { logger.info("token file written again", metadata: ["path": "\(path)"]) }
        } catch {
            if state.failures.updateValue(error.description, forKey: path) != error.description {
                let retry = Int(Self.retryDelay)  // conversion: a constant, 30
                logger.error("token file: \(error.description); tokend tries again every \(retry) s", metadata: ["path": "\(path)"])
            }
            state.holds[path] = nil
            guard !state.stopped else { return }
            let owner = state.owners[path]
            _ = timers.schedule(at: clock.now().addingTimeInterval(Self.retryDelay)) { [weak self] in
                guard let self else { return }
                if let owner {
                    reconcile(owner)
                } else {
                    // A removal no account will retry (the account gave the path up).
                    self.state.withLock { state in
                        if state.owners[path] == nil { self.settle(path, to: nil, in: &state) }
                    }
                }
            }
        }
    }
}
