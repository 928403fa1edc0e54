import Logging
import TokendCore

/// Coalesced write-back of ID and access tokens (`WriteBackQueue`, docs/architecture.md
/// "Keyring write-back"): a refresh that did not rotate the refresh token is served at once, and
/// its tokens reach the keyring later, one account at a time, paced so that the keyring is never
/// kept busy by them. Everything that cannot wait — a rotated refresh token, an import, a
/// login's session — is written at once, as before, and clears the account's
/// `writeBackDeferred`; its place in the queue is then skipped when its turn comes.
extension AccountEngine {
    /// At shutdown, deferred write-backs go out for at most this long: a user with a handful of
    /// accounts keeps every current token, and systemd's stop timeout (90 s) is never at risk
    /// with thousands of accounts, whose stored refresh tokens are current anyway.
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
        guard let account = accounts[name], account.writeBackDeferred, let tokens = account.machine.tokens else { return }
        if case .refreshing = account.machine.phase {
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
