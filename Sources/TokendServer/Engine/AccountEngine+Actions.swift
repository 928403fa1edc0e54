import Logging
import TokendCore
import TokendKeyring
import TokendProtocol

/// The engine's side of an account's transitions (AccountTransitions.swift): hand the account
/// an input, then carry out the actions it returns, in order. Nothing here decides anything
/// about the account; it only talks to the timers, the provider, the keyring, waiting requests
/// and watchers.
extension AccountEngine {
    /// Applies `input` to the account `name`, if it is configured, and carries out what follows.
    func apply(_ input: AccountInput, to name: String) async {
        await perform(transition(name, input), for: name)
    }

    /// The account's transition for `input`, stored back; the effects are the caller's to carry
    /// out (none when the account is not configured).
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
        case .tell(let news): tell(news, of: name)
        case .deferWriteBack: queueWriteBack(name)
        case .save, .deleteStored: tasks.spawn { await self.perform([action], for: name) }
        }
    }

    /// Runs the refresh (or narrowed grant) `ticket` started, in the background.
    func callProvider(_ name: String, ticket: AccountTicket) {
        guard let account = accounts[name], let presented = ticket.refreshToken else { return }
        let provider = account.provider
        // The machine as the refresh left it: the answer is merged against its tokens even if
        // the account is gone by then.
        let started = account.machine
        tasks.spawn {
            let outcome: RefreshOutcome
            if let scope = ticket.narrowedTo {
                outcome = await provider.refresh(refreshToken: presented, narrowedTo: scope).bounded
            } else {
                outcome = await provider.refresh(refreshToken: presented).bounded
            }
            await self.finishRefresh(name, ticket: ticket, outcome: outcome, started: started)
        }
    }

    /// Tells the log and watchers what an account's transition had to say.
    func tell(_ news: AccountNews, of name: String) {
        let now = clock.now()
        let account: Logger.Metadata = ["account": "\(name)"]
        switch news {
        case .refreshed(let tokens, let previous, let took):
            publishRefreshed(name, tokens: tokens, previous: previous, at: now, took: took)
        case .scopesNarrowed(let lost):
            logger.warning(
                "the provider narrowed the session's scopes; sign in again to get them back: tokenctl login \(name)",
                metadata: account.merging(["lost_scopes": "\(lost.joined(separator: " "))"]) { $1 })
        case .refreshFailed(let failure, let retryAt, let took):
            report(failure, of: name, as: .refreshFailed, level: .warning, "refresh failed, will retry", at: now, took: took, retryAt: retryAt)
        case .sessionEnded(let failure, let took):
            report(failure, of: name, as: .needsLogin, level: .error, "the provider ended the session; the account needs a new login", at: now, took: took)
        case .misconfigured(let failure, let took):
            report(failure, of: name, as: .configError, level: .error, "the provider rejects the account's configuration", at: now, took: took)
        case .grantMinted(let scope, let expiresAt, let took):
            logger.info("scoped token minted", metadata: [
                "account": "\(name)", "scope": "\(scope)", "expires_at": "\(Timestamp.format(expiresAt))", "took_ms": "\(took)",
            ])
        case .grantRefused(let scope, let refusal, let took):
            logger.warning("a scoped token was refused", metadata: ["account": "\(name)", "scope": "\(scope)", "error": "\(refusal.message)", "took_ms": "\(took)"])
        case .refreshOvertaken:
            logger.info("a refresh finished after a newer session arrived; its result is dropped", metadata: account)
        case .refusalDuringPasswordChange:
            logger.notice("a refresh was refused while the user's password was being set; retried", metadata: account)
        case .storedSessionBoundElsewhere:
            logger.error("the stored session was issued by another endpoint than the configured one; it is not used", metadata: account)
        case .storedSessionUnreadable:
            logger.error("the stored session cannot be read; the account needs a new import or login", metadata: account)
        case .readOvertaken:
            logger.info("a keyring read finished after the account changed; its result is dropped", metadata: account)
        }
    }
}
