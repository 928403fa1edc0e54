import Logging
import TokendCore
import TokendKeyring
import TokendProtocol

extension AccountEngine {
    /// Takes the account's refresh slot for a refresh, or with `scope` a narrowed grant
    /// (`requested`: a `token` request asks for it now), unless the slot is taken.
    func startRefresh(_ name: String, force: Bool = false, narrowedTo scope: TokenScope? = nil, requested: Bool = false) {
        // A refresh the user did not force waits for the promises made on the held token: a
        // provider that revokes on refresh would break them (docs/architecture.md, "Promises").
        if !force, scope == nil, accounts[name] != nil, heldTokens.claimForRefresh(name, at: clock.now()) != nil { return schedule(name) }
        // A started refresh waits for nothing: its provider call runs in the background.
        for effect in transition(name, .refreshWanted(force: force, narrowedTo: scope, requested: requested, at: clock.now())) { performAtOnce(effect, for: name) }
    }

    /// The provider answered a refresh: the account's transition decides what follows. If a reload
    /// removed the account meanwhile, a rotated refresh token may be the only live one: the
    /// session it makes is returned, for the keyring (`KeyringUpkeep.saveOrphanedRotation`).
    func finishRefresh(_ name: String, ticket: AccountTicket, outcome: RefreshOutcome, started: AccountState, sent: Double) async -> TokenSet? {
        guard ticket.refreshToken != nil else { return nil }
        let now = clock.now()
        guard account(name, holding: ticket, unless: .removed) != nil else { return started.orphanedSession(ticket, outcome, at: now) }
        await apply(.refreshAnswered(ticket, outcome, at: now, took: clock.steadySeconds() - sent, jitterDraw: drawJitter()), to: name)
        return nil
    }

    // MARK: - Timers

    /// Arms the account's timer for its next wake-up (the scheduler decides when).
    func schedule(_ name: String) {
        guard var account = accounts[name], !isShutDown else { return disarm(name) }
        let now = clock.now()
        account.arm(on: &scheduler, notBefore: heldTokens.outstanding(name, at: now), now: now, fire: hop { await $0.timerFired(name) })
        accounts[name] = account
    }

    /// No timer armed for the account.
    func disarm(_ name: String) {
        guard accounts[name]?.armedDeadline != nil else { return }
        accounts[name]!.disarm(on: &scheduler)
    }

    func timerFired(_ name: String) async {
        let now = clock.now()
        // A due refresh waits for the promises made on the held token (startRefresh's rule).
        if let account = accounts[name], account.isRefreshDue(at: now),
            heldTokens.claimForRefresh(name, at: now) != nil
        {
            return schedule(name)
        }
        await apply(.woke(at: now), to: name)
    }
}
