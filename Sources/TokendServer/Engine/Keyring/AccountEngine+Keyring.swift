import TokendCore
import TokendKeyring
import TokendProtocol

extension AccountEngine {
    /// Reads the stored sessions of `names`: of many, with one bulk read of the keyring
    /// (`SecretStore.loadAll`; one by one, 10,000 reads took minutes), then one by one those the
    /// bulk read could not attribute. Those reads are made all at once, not one after another:
    /// behind a frozen Secret Service each ends at the same keyring timeout.
    public func restore(_ names: [String]) async {
        var unread = names
        if names.count > 1 {
            for name in names { await writeSetAside(name) }
            let tickets = names.compactMap { name in accounts[name].map { (name, $0.ticket()) } }
            unread = []
            switch await store.loadAll() {
            case .failure(let error):
                // What each account's own read would have said too (a locked keyring is not
                // a failure here: its items are left to the reads one by one).
                for (name, ticket) in tickets { await apply(.storedSessionRead(ticket, .failure(error), jitterDraw: drawJitter()), to: name) }
            case .success(let read):
                for (name, ticket) in tickets {
                    if let session = read.sessions[name] {
                        await apply(.storedSessionRead(ticket, session.map { Optional($0) }, jitterDraw: drawJitter()), to: name)
                    } else if read.othersMayExist {
                        unread.append(name)
                    } else {
                        await apply(.storedSessionRead(ticket, .success(nil), jitterDraw: drawJitter()), to: name)
                    }
                }
            }
        }
        await withTaskGroup(of: Void.self) { group in
            for name in unread { group.addTask { await self.restore(name) } }
        }
    }

    /// Loads the account's stored session at start (or when it is added by a reload).
    ///
    /// The read is applied only if nothing happened to the account meanwhile: a logout, an
    /// import, or a reload that removed and re-added it while the keyring answered would
    /// otherwise be undone by what the read found.
    func restore(_ name: String) async {
        await writeSetAside(name)
        guard let ticket = accounts[name]?.ticket() else { return }
        let loaded = await store.load(account: name)
        await apply(.storedSessionRead(ticket, loaded, jitterDraw: drawJitter()), to: name)
    }

    /// Writes the account's held `tokens` back (the keyring's poll, a coalesced write-back) and,
    /// if they are still the held ones when the keyring answers, records it: written, nothing of
    /// the account is unsaved or deferred any more; not written, the poll writes it once the
    /// keyring answers again. Nil when something newer arrived meanwhile (its own write decides).
    func writeHeldSession(_ name: String, _ tokens: TokenSet) async -> Bool? {
        let saved = await store.save(tokens, account: name)
        let written = noteKeyring(saved, account: name)
        guard accounts[name]?.machine.tokens == tokens else { return nil }
        accounts[name]?.unsaved = !written
        if written { accounts[name]?.writeBackDeferred = false }
        return written
    }

    /// Records what a keyring operation said about the keyring; returns whether it succeeded.
    /// Any failure starts the poll that writes back and reloads once the keyring is usable.
    func noteKeyring(_ result: Result<Void, KeyringError>, account name: String) -> Bool {
        let state = keyringState.after(result)
        if state != keyringState {
            let previous = keyringState
            keyringState = state
            publishKeyringState(state, was: previous)
        }
        if case .failure(let error) = result {
            logger.warning("keyring operation failed", metadata: ["account": "\(name)", "code": "\(error.code.rawValue)", "error": "\(error.message)"])
            startKeyringPoll()
        }
        return (try? result.get()) != nil
    }

    var hasKeyringWork: Bool {
        accounts.hasSetAsideOfRemoved
            || accounts.configured.contains { _, account in
                if account.unsaved { return true }
                if case .awaitingKeyring = account.machine.phase { return true }
                return false
            }
    }

    /// How often a locked or missing keyring is probed while something waits to be written or read.
    static let keyringPollInterval: Double = 2

    func startKeyringPoll() {
        guard keyringPoll == nil, !isShutDown else { return }
        keyringPoll = scheduler.timers.schedule(at: clock.now().addingTimeInterval(Self.keyringPollInterval), hop { await $0.keyringPollFired() })
    }

    /// One probe, then the next one while there is still something to write back or read.
    func keyringPollFired() async {
        keyringPoll = nil
        await pollKeyring()
        if hasKeyringWork { startKeyringPoll() }
    }

    /// While something waits for the keyring: probe it, and the moment it is usable write back
    /// unsaved sessions and read the ones we could not read — without waiting for a refresh.
    func pollKeyring() async {
        guard !keyringPollRunning else { return }
        keyringPollRunning = true
        defer { keyringPollRunning = false }
        guard hasKeyringWork else { return }
        let state = await store.state()
        guard state == .available else {
            if state != keyringState {
                let code: KeyringError.Code = switch state {
                case .locked: .locked
                case .needsConfirmation: .timedOut
                default: .unavailable
                }
                _ = noteKeyring(.failure(KeyringError(code, "keyring \(state.rawValue)")), account: "-")
            }
            return
        }
        var unread: [String] = []
        for name in accounts.names {
            guard let account = accounts[name] else { continue }
            if case .awaitingKeyring = account.machine.phase {
                unread.append(name)
            } else if account.unsaved, let tokens = account.machine.tokens {
                if await writeHeldSession(name, tokens) == true {
                    logger.info("session written back to the keyring", metadata: ["account": "\(name)"])
                }
            } else if account.unsaved {
                accounts[name]?.unsaved = false
            }
        }
        await restore(unread)
        // Sessions of removed accounts; a re-added one's is written by its `restore` instead.
        for name in accounts.setAsideOfRemoved {
            if await writeSetAside(name) {
                logger.info("the session of a removed account was written back to the keyring", metadata: ["account": "\(name)"])
            }
        }
    }

    /// Writes the session set aside for `name`, if any, and forgets it once the keyring has it
    /// (unless a newer one was set aside meanwhile). False: the keyring refused it, and it stays
    /// set aside for the next read or poll.
    @discardableResult
    func writeSetAside(_ name: String) async -> Bool {
        guard let tokens = accounts[setAside: name] else { return false }
        guard noteKeyring(await store.save(tokens, account: name), account: name) else { return false }
        if accounts[setAside: name] == tokens { accounts[setAside: name] = nil }
        return true
    }
}

extension KeyringState {
    /// The keyring's mood after an operation answered `result`: any success means usable; a
    /// locked answer, locked; a failure of one item (`failed`, `corrupt`) or a write still queued
    /// behind others (`queued`: busy, not down) says nothing about the keyring; anything else (no
    /// Secret Service) means unavailable; a timeout, a service that may wait on a dialog.
    func after(_ result: Result<Void, KeyringError>) -> KeyringState {
        switch result {
        case .success: .available
        case .failure(let error) where error.code == .locked: .locked
        case .failure(let error) where [.timedOut, .needsConfirmation].contains(error.code): .needsConfirmation
        case .failure(let error) where [.failed, .corrupt, .queued].contains(error.code): self
        case .failure: .unavailable
        }
    }
}
