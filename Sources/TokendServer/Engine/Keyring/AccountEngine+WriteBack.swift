import Logging
import TokendCore

/// Coalesced write-back of ID and access tokens, paced (`WriteBackQueue`, docs/architecture.md
/// "Keyring write-back"); a write that cannot wait clears `writeBackDeferred`, and the queue skips it.
extension AccountEngine {
    /// Deferred write-backs go out at shutdown for at most this long: a handful of accounts keep
    /// every token, and thousands (whose refresh tokens are stored) never risk systemd's 90 s.
    static let writeBackAtShutdown: Double = 2

    func queueWriteBack(_ name: String) {
        writeBacks.queue(name, at: clock.now())
        armWriteBack()
    }

    func armWriteBack() {
        guard writeBackTimer == nil, !writeBackRunning, !isShutDown, let due = writeBacks.nextDue else { return }
        writeBackTimer = timers.schedule(at: due, hop { await $0.writeBackFired() })
    }

    func writeBackFired() async {
        writeBackTimer = nil
        if let name = writeBacks.take(at: clock.now()) { await writeBack(name) }
        armWriteBack()
    }

    /// Writes the account's held session, if it still has one the keyring lacks. An account in
    /// the middle of a refresh waits for its outcome: a rotation is written in full by it, and a
    /// refresh that did not rotate queues the account again.
    func writeBack(_ name: String) async {
        guard let account = accounts[name], account.writeBackDeferred, let tokens = account.tokens else { return }
        if account.isRefreshing {
            writeBacks.queue(name, at: clock.now())
            return
        }
        writeBackRunning = true
        defer { writeBackRunning = false }
        let started = clock.now()
        _ = await writeHeldSession(name, tokens)
        writeBacks.wrote(name, started: started, finished: clock.now())
    }

    /// The daemon is stopping: write back what waits, longest due first, for at most
    /// `writeBackAtShutdown` seconds.
    public func writeBackBeforeStopping() async {
        writeBackTimer?.cancel()
        writeBackTimer = nil
        let deadline = clock.now().addingTimeInterval(Self.writeBackAtShutdown)
        for name in writeBacks.waitingInOrder where clock.now() < deadline {
            await writeBackOutOfTurn(name)
        }
    }

    /// Writes `name`'s deferred tokens now, ahead of the paced queue (shutdown, an import).
    func writeBackOutOfTurn(_ name: String) async {
        writeBacks.drop(name)
        await writeBack(name)
    }
}
