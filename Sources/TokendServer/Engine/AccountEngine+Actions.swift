import Logging
import TokendCore
import TokendKeyring
import TokendProtocol

/// The engine's side of an account's transitions (AccountTransitions.swift): hand the account
/// an input, then carry out the effects it returns, in order. Nothing here decides.
extension AccountEngine {
    /// Applies `input` to the account `name`, if it is configured, and carries out what follows.
    func apply(_ input: AccountInput, to name: String) async {
        await perform(transition(name, input), for: name)
    }

    /// The account's transition for `input`, stored back; its effects are the caller's to carry out.
    func transition(_ name: String, _ input: AccountInput) -> [AccountEffect] {
        guard var account = accounts[name] else { return [] }
        let effects = account.apply(input)
        accounts[name] = account
        return effects
    }

    /// Carries out `actions` in order; the keyring's wait for its answer.
    func perform(_ actions: [AccountEffect], for name: String) async {
        for action in actions {
            switch action {
            case .save(let tokens, let ticket, let answer):
                let saved = await store.save(tokens, account: name)
                await apply(.persisted(ticket, answer: answer, tokens, saved, at: clock.now(), jitterDraw: drawJitter()), to: name)
            case .deleteStored(let refreshToken):
                let deleted = await store.delete(account: name, ifRefreshToken: refreshToken)
                _ = noteKeyring(deleted.map { _ in () }, account: name)
            default:
                performAtOnce(action, for: name)
            }
        }
    }

    /// Carries out an action that waits for nothing; one that waits runs as background work.
    func performAtOnce(_ action: AccountEffect, for name: String) {
        switch action {
        case .disarm: disarm(name)
        case .schedule: schedule(name)
        case .wakeWaiters: wake(name)
        case .callProvider(let ticket): callProvider(name, ticket: ticket)
        case .noteKeyring(let error): _ = noteKeyring(error.map { .failure($0) } ?? .success(()), account: name)
        case .tell(let news): narrator.tell(news, of: name)
        case .deferWriteBack: queueWriteBack(name)
        case .setAside(let tokens): accounts[setAside: name] = tokens
        case .readStoredSession: tasks.spawn { await self.keyring.restore(name) }
        case .save, .deleteStored: tasks.spawn { await self.perform([action], for: name) }
        }
    }

    /// Runs the refresh (or narrowed grant) `ticket` started, in the background, timed by the steady clock (`AccountState.apply`).
    func callProvider(_ name: String, ticket: AccountTicket) {
        guard let account = accounts[name], let presented = ticket.refreshToken else { return }
        let provider = account.provider
        // The account as the refresh left it: the answer is merged against its tokens even if
        // the account is gone by then.
        let started = account
        let sent = clock.steadySeconds()
        tasks.spawn {
            let outcome: RefreshOutcome
            if let scope = ticket.narrowedTo {
                outcome = await provider.refresh(refreshToken: presented, narrowedTo: scope).bounded
            } else {
                outcome = await provider.refresh(refreshToken: presented).bounded
            }
            if let orphaned = await self.finishRefresh(name, ticket: ticket, outcome: outcome, started: started, sent: sent) {
                await self.keyring.saveOrphanedRotation(orphaned, account: name, replacing: presented)
            }
        }
    }
}
