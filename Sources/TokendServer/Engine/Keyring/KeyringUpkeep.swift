import TokendCore
import TokendKeyring

/// Brings the keyring in line with memory: reads stored sessions (at start, for added accounts,
/// once a locked keyring opens) and, while it was locked or missing, writes back what it lacks.
/// A client of the actor like the user's commands: every read it brings back is an input whose
/// ticket the account's transition checks, so a session that changed meanwhile is never undone.
public struct KeyringUpkeep: Sendable {
    let engine: AccountEngine

    /// Reads the stored sessions of `names`: of many, with one bulk read (10,000 reads one by one
    /// took minutes), then those it could not attribute one by one — all at once, so behind a
    /// frozen Secret Service each ends at the same keyring timeout; then removes what moves left.
    public func restore(_ names: [String]) async {
        var unread = names
        if names.count > 1 {
            let tickets = await engine.readTickets(names)
            let read = await engine.store.loadAll()
            unread = []
            for (name, ticket) in tickets {
                guard let session = read.session(of: name) else { unread.append(name); continue }
                await engine.apply(.storedSessionRead(ticket, session, jitterDraw: engine.drawJitter()), to: name)
            }
        }
        await withTaskGroup(of: Void.self) { group in
            for name in unread { group.addTask { await restore(name) } }
        }
        // Now that the accounts' own sessions are known: the old copies moves left.
        await engine.removeLeftovers()
    }

    /// Reads one account's stored session; its transition drops the read if a logout, an import
    /// or a reload changed the account meanwhile.
    func restore(_ name: String) async {
        guard let ticket = await engine.readTickets([name]).first?.ticket else { return }
        let loaded = await engine.store.load(account: name)
        await engine.apply(.storedSessionRead(ticket, loaded, jitterDraw: engine.drawJitter()), to: name)
    }

    /// Writes a rotated session whose account a reload removed, if the keyring still holds the
    /// refresh token it replaces; one the keyring cannot take now waits set aside for the poll.
    func saveOrphanedRotation(_ tokens: TokenSet, account name: String, replacing old: String) async {
        let failure: KeyringError
        switch await engine.store.load(account: name) {
        case .success(let stored?) where stored.refreshToken == old:
            let saved = await engine.store.save(tokens, account: name)
            guard case .failure(let error) = saved else {
                _ = await engine.noteKeyring(saved, account: name)
                return engine.logger.info("a refresh that finished after its account was removed had its rotated token saved", metadata: ["account": "\(name)"])
            }
            failure = error
        case .success:
            return  // the keyring holds another session (or none): this one is not the newest
        case .failure(let error):
            failure = error
        }
        await engine.setAsideIfRemoved(name, tokens, after: failure)
    }

    /// While something waits for the keyring: probe it, and the moment it is usable write back
    /// unsaved sessions and read the ones that could not be read — without waiting for a refresh.
    func poll() async {
        let states = await engine.store.states()
        for (kind, state) in states { await engine.keyringProbed(state, store: kind) }
        // A store no account uses any more (a move's target that refused) has nothing to report.
        await engine.forgetStores(besides: Set(states.keys))
        guard states.values.contains(.available) else { return }
        var unread: [String] = []
        // Only the accounts whose own store answers: another store's trouble is not theirs.
        for name in await engine.accountNames where states[engine.store.kind(of: name)] == .available {
            switch await engine.writeBackUnsaved(name) {
            case nil: unread.append(name)
            case true?: engine.logger.info("session written back to the keyring", metadata: ["account": "\(name)"])
            case false?: break
            }
        }
        await restore(unread)
        // Sessions of removed accounts; a re-added one's is written by its `restore` instead.
        for name in await engine.setAsideOfRemoved where await engine.writeSetAside(name) {
            engine.logger.info("the session of a removed account was written back to the keyring", metadata: ["account": "\(name)"])
        }
    }
}

extension AccountEngine {
    public nonisolated var keyring: KeyringUpkeep { KeyringUpkeep(engine: self) }
}
