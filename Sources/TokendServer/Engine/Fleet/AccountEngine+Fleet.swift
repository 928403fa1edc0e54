import TokendCore
import TokendFleet

extension AccountEngine {
    /// What another member of the fleet did to a shared account's session: a new session is
    /// held from now on as an import would be (no refresh, no revocation, nothing sent anywhere)
    /// and served at once; its local copy is written off the watch (`copyToLocalStore`). A
    /// logout forgets it here too.
    public func followFleet(_ name: String, _ change: FleetChange) async {
        guard let account = accounts[name] else { return }
        switch change {
        case .put(let tokens):
            // A refresh in flight here is the fleet's (FleetMember.refresh): it answers with this
            // session itself, so an import's or a `tokenctl refresh`'s wait ends in success.
            guard account.tokens != tokens, !account.isRefreshing else { return }
            // etcd answered with it, and a member reached the provider: a backoff earned while the
            // fleet could not be reached ends (a member that becomes holder must not wait it out).
            let liftingBackoff = account.lastError.map(FleetError.isFleets) ?? false
            await apply(.sessionGiven(tokens, committing: nil, at: clock.now(), jitterDraw: drawJitter(), liftingBackoff: liftingBackoff), to: name)
            // A given session's timer waits for its write; a follower's runs at once: it is how
            // this member takes over when the holder goes.
            schedule(name)
            copyToLocalStore(name)
            logger.info("session taken from the fleet", metadata: ["account": "\(name)"])
        case .deleted:
            guard account.tokens != nil else { return }
            _ = await forgetSession(name, committing: nil, reason: FleetError.loggedOutElsewhere(name))
            logger.info("session forgotten: logged out on another member of the fleet", metadata: ["account": "\(name)"])
        }
    }

    /// Queues the local copy of a session the fleet's watch brought. The watch must not wait for
    /// the local store (gnome-keyring rewrites its whole file per write: at 1,000 accounts a
    /// member fell minutes behind); the copy is only a cache of etcd, so each account's newest
    /// session is written, one write at a time, each followed by a pause as long as it took (the
    /// writes that cannot wait, a holder's rotation before it serves, get half the store's time),
    /// and a failed one is retried by the keyring poll.
    func copyToLocalStore(_ name: String) {
        fleetCopies.add(name)
        guard !fleetCopies.isWriting, !isShutDown else { return }
        fleetCopies.isWriting = true
        tasks.spawn { await self.writeFleetCopies() }
    }

    /// A copy waits this long for a refresh in flight on its account (which writes its own
    /// answer): a provider's answer takes about that.
    static let fleetCopyRetry: Double = 1

    func writeFleetCopies() async {
        var refreshing: [String] = []
        while let name = fleetCopies.next() {
            guard let account = accounts[name], let tokens = account.tokens else { continue }
            // Written after the refresh's own write, this copy could put back the refresh token it replaced.
            if account.isRefreshing {
                refreshing.append(name)
                continue
            }
            let started = clock.steadySeconds()
            _ = await writeHeldSession(name, tokens)
            guard await timers.sleep(seconds: clock.steadySeconds() - started, from: clock) else { break }
        }
        fleetCopies.isWriting = false
        guard !refreshing.isEmpty, !isShutDown else { return }
        let later = refreshing
        _ = timers.schedule(at: clock.now().addingTimeInterval(Self.fleetCopyRetry), hop { engine in
            for name in later { await engine.copyToLocalStore(name) }
        })
    }
}

/// The accounts whose session came from the fleet's watch and may not be in the local store yet,
/// each once, oldest first (`AccountEngine.copyToLocalStore`).
struct FleetCopies {
    private var order: [String] = []
    private var queued: Set<String> = []
    /// A copy is being written: one at a time, so the local store's queue never fills with them.
    var isWriting = false

    mutating func add(_ name: String) {
        if queued.insert(name).inserted { order.append(name) }
    }

    mutating func next() -> String? {
        guard !order.isEmpty else { return nil }
        let name = order.removeFirst()
        queued.remove(name)
        return name
    }
}
