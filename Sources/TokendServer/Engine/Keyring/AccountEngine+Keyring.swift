import TokendCore
import TokendKeyring
import TokendProtocol

extension AccountEngine {
    /// Tickets for reads of the stored sessions of `names`, once each one's set-aside session
    /// (if any) is written: the keyring's item must hold what rotated in memory before it is read.
    func readTickets(_ names: [String]) async -> [(name: String, ticket: AccountTicket)] {
        for name in names { await writeSetAside(name) }
        return names.compactMap { name in accounts[name].map { (name, $0.ticket()) } }
    }

    /// Writes the account's held `tokens` back (the keyring's poll, a coalesced write-back);
    /// whether the keyring took them, or nil when something newer arrived meanwhile.
    func writeHeldSession(_ name: String, _ tokens: TokenSet) async -> Bool? {
        let saved = await store.save(tokens, account: name)
        guard accounts[name]?.tokens == tokens else {
            _ = noteKeyring(saved, account: name)
            return nil
        }
        await apply(.sessionStored(tokens, saved), to: name)
        return (try? saved.get()) != nil
    }

    /// Records what a keyring operation on the account's session said about its store; returns
    /// whether it succeeded. Any failure starts the poll that writes back and reloads once the
    /// store is usable.
    func noteKeyring(_ result: Result<Void, KeyringError>, account name: String) -> Bool {
        noteKeyring(result, store: store.kind(of: name), account: name)
    }

    /// The same for an operation on the store `kind` (a move's target, a probe).
    func noteKeyring(_ result: Result<Void, KeyringError>, store kind: StoreKind?, account name: String) -> Bool {
        let previous = keyringStates[kind] ?? .available
        let now = previous.after(result)
        keyringStates[kind] = now
        if now != previous { narrator.publishKeyringState(now, was: previous, store: kind) }
        if case .failure(let error) = result {
            narrator.keyringFailed(error, account: name)
            startKeyringPoll()
        }
        return (try? result.get()) != nil
    }

    /// Something waits for a store: a session to write back or to read, or an old copy a move
    /// could not remove yet.
    var hasKeyringWork: Bool {
        accounts.hasSetAsideOfRemoved || accounts.configured.contains { $0.account.hasKeyringWork }
            || (store as? BootAnchoredStore)?.router?.moves.accounts.contains { accounts[$0.key] != nil && !$0.value.leftovers.isEmpty } == true
    }

    /// How often a locked or missing keyring is probed while something waits to be written or read.
    static let keyringPollInterval: Double = 2

    func startKeyringPoll() {
        guard keyringPoll == nil, !isShutDown else { return }
        keyringPoll = scheduler.timers.schedule(at: clock.now().addingTimeInterval(Self.keyringPollInterval), hop { await $0.keyringPollFired() })
    }

    /// One probe (KeyringUpkeep.poll), then the next one while something still waits for the keyring.
    /// With nothing waiting, one last probe still settles a state left unusable (a read that found
    /// nothing does not say the keyring is usable).
    func keyringPollFired() async {
        keyringPoll = nil
        guard !keyringPollRunning, hasKeyringWork || keyringStates.values.contains(where: { $0 != .available }) else { return }
        keyringPollRunning = true
        await keyring.poll()
        keyringPollRunning = false
        if hasKeyringWork { startKeyringPoll() }
    }

    /// What the probe found, said once, as an operation's answer would be: unusable, or usable
    /// (its login collection unlocked), which a read that found nothing cannot tell.
    func keyringProbed(_ state: KeyringState, store kind: StoreKind?) {
        guard state != keyringStates[kind] ?? .available else { return }
        _ = noteKeyring(state == .available ? .success(()) : .failure(state.probeFailure), store: kind, account: "-")
    }

    /// Drops the mood of every store but `inUse`: one no account uses is nobody's state to show.
    func forgetStores(besides inUse: Set<StoreKind?>) {
        for kind in keyringStates.keys where !inUse.contains(kind) { keyringStates[kind] = nil }
    }

    /// What the poll does for the account now that the keyring answers: write back its unsaved
    /// session (true once written), or nothing (false); nil: it waits for a read instead.
    func writeBackUnsaved(_ name: String) async -> Bool? {
        guard let account = accounts[name] else { return false }
        if account.isAwaitingKeyring { return nil }
        guard let tokens = account.sessionToWriteBack else { return false }
        return await writeHeldSession(name, tokens) == true
    }

    var setAsideOfRemoved: [String] { accounts.setAsideOfRemoved }

    /// A removed account's session did not reach the keyring: noted, and set aside for the poll
    /// unless the account is back (its own session is newer).
    func setAsideIfRemoved(_ name: String, _ tokens: TokenSet, after failure: KeyringError) {
        _ = noteKeyring(.failure(failure), account: name)
        if accounts[name] == nil { accounts[setAside: name] = tokens }
    }

    /// Writes the session set aside for `name`, if any, and forgets it once the keyring has it
    /// (unless a newer one was set aside meanwhile). False: it stays for the next read or poll.
    @discardableResult
    func writeSetAside(_ name: String) async -> Bool {
        guard let tokens = accounts[setAside: name] else { return false }
        guard noteKeyring(await store.save(tokens, account: name), account: name) else { return false }
        if accounts[setAside: name] == tokens { accounts[setAside: name] = nil }
        return true
    }
}
