import Logging
import TokendCore
import TokendKeyring
import TokendProtocol

extension AccountEngine {
    /// Takes the account's refresh slot and runs a refresh in the background, or with `scope` a
    /// grant of a token narrowed to it (AccountEngine+ScopedTokens.swift; `requested`: a `token`
    /// request asked for it now). False when the slot is taken (callers wait for that one) or
    /// nothing can be refreshed.
    @discardableResult
    func startRefresh(_ name: String, force: Bool = false, narrowedTo scope: TokenScope? = nil, requested: Bool = false) -> Bool {
        guard var account = accounts[name] else { return false }
        guard let refresh = account.machine.startRefresh(at: clock.now(), force: force) else { return false }
        scheduler.disarm(&account.wake)
        if let scope { account.scopedTokens.inFlight = scope }
        accounts[name] = account
        wake(name)
        let provider = account.provider
        let ticket = account.ticket(refresh: refresh)
        // The machine as the refresh left it: the answer is merged against its tokens even if
        // the account is gone by then.
        let started = account.machine
        tasks.spawn {
            guard let scope else {
                let outcome = await provider.refresh(refreshToken: refresh.refreshToken).bounded
                return await self.finishRefresh(name, ticket: ticket, outcome: outcome, started: started)
            }
            let outcome = await provider.refresh(refreshToken: refresh.refreshToken, narrowedTo: scope).bounded
            await self.finishScopedGrant(name, scope, ticket: ticket, outcome: outcome, started: started, requested: requested)
        }
        return true
    }

    func finishRefresh(_ name: String, ticket: AccountTicket, outcome: RefreshOutcome, started: AccountMachine) async {
        guard let refresh = ticket.refresh else { return }
        let now = clock.now()
        guard var account = self.account(name, holding: ticket, unless: .removed) else {
            // The account was removed (or removed and added again) by a reload while this refresh
            // ran. A rotated refresh token may be the only live one now: it still goes to the
            // keyring, unless the stored session is no longer the one this refresh started from.
            if case .refreshed(let issued) = outcome, let rotated = issued.refreshToken, rotated != refresh.refreshToken,
                let next = started.tokensAfter(refresh, issued, at: now)
            {
                await saveOrphanedRotation(next, account: name, replacing: refresh.refreshToken)
            }
            return
        }
        let previous = account.machine.tokens
        var outcome = outcome
        if case .needsLogin(let failure) = outcome, account.passwordChangesInFlight > 0 {
            // The upgrade in flight voided this refresh token; its own answer decides. Should it
            // fail, the retry hears the verdict again.
            logger.notice("a refresh was refused while the user's password was being set; retried", metadata: ["account": "\(name)"])
            outcome = .transient(failure, retryAfter: nil)
        }
        var completion = account.machine.finish(refresh, outcome, at: now, unit: random())
        accounts[name] = account
        var saved: Result<Void, KeyringError>? = nil
        if case .persist(let next) = completion {
            // A rotated refresh token reaches the keyring before anyone is handed the new tokens:
            // a crash from here on cannot leave the keyring with a superseded one.
            saved = await store.save(next, account: name)
            guard self.account(name, holding: ticket, unless: .removed) != nil else { return }
            completion = accounts[name]!.machine.persisted(refresh, next, at: now, unit: random())
        }
        let took = Int(saturating: now.timeIntervalSince(refresh.startedAt) * 1000)
        switch completion {
        case .stale, .persist:
            logger.info("a refresh finished after a newer session arrived; its result is dropped", metadata: ["account": "\(name)"])
            return
        case .refreshed(let tokens):
            if let saved { accounts[name]?.unsaved = !noteKeyring(saved, account: name) }
            warnIfNarrowed(name, granted: previous?.scopes, outcome: outcome)
            publishRefreshed(name, tokens: tokens, previous: previous, at: now, took: took)
        case .willRetry(let failure, let retryAt):
            report(failure, of: name, as: .refreshFailed, level: .warning, "refresh failed, will retry", at: now, took: took, retryAt: retryAt)
        case .loggedOut(let failure, let refreshToken):
            report(failure, of: name, as: .needsLogin, level: .error, "the provider ended the session; the account needs a new login", at: now, took: took)
            schedule(name)
            wake(name)
            // Only if it is still the refresh token that failed: an import may have replaced it.
            let deleted = await store.delete(account: name, ifRefreshToken: refreshToken)
            _ = noteKeyring(deleted.map { _ in () }, account: name)
            return
        case .misconfigured(let failure):
            report(failure, of: name, as: .configError, level: .error, "the provider rejects the account's configuration", at: now, took: took)
        }
        schedule(name)
        wake(name)
    }

    /// A refresh answered with fewer scopes than the session was granted: the provider gave a
    /// rotated refresh token a narrowed scope (against RFC 6749 §6; django-oauth-toolkit does
    /// after a scoped grant). Only a new login widens it again, so the log says so.
    func warnIfNarrowed(_ name: String, granted: [String]?, outcome: RefreshOutcome) {
        guard case .refreshed(let issued) = outcome, let granted, let answered = issued.scopes else { return }
        let lost = Set(granted).subtracting(answered).sorted()
        guard !lost.isEmpty else { return }
        logger.warning(
            "the provider narrowed the session's scopes; sign in again to get them back: tokenctl login \(name)",
            metadata: ["account": "\(name)", "lost_scopes": "\(lost.joined(separator: " "))"])
    }

    /// Writes a rotated session whose account is gone, if the keyring still holds the refresh
    /// token it replaces (a read then a write, both queued in order from this actor). A keyring
    /// that cannot take it now gets it from the keyring poll.
    func saveOrphanedRotation(_ tokens: TokenSet, account name: String, replacing old: String) async {
        switch await store.load(account: name) {
        case .success(let stored?) where stored.refreshToken == old:
            let saved = await store.save(tokens, account: name)
            if noteKeyring(saved, account: name) {
                logger.info("a refresh that finished after its account was removed had its rotated token saved", metadata: ["account": "\(name)"])
            } else if accounts[name] == nil {
                accounts[setAside: name] = tokens
            }
        case .success:
            return  // the keyring holds another session (or none): this one is not the newest
        case .failure(let error):
            _ = noteKeyring(.failure(error), account: name)
            if accounts[name] == nil { accounts[setAside: name] = tokens }
        }
    }

    // MARK: - Timers

    /// Arms the account's timer for its next wake-up (the scheduler decides when).
    func schedule(_ name: String) {
        guard var account = accounts[name], !isShutDown else { return disarm(name) }
        scheduler.arm(&account.wake, machine: account.machine, now: clock.now(), fire: hop { await $0.timerFired(name) })
        accounts[name] = account
    }

    /// No timer armed for the account.
    func disarm(_ name: String) {
        guard accounts[name]?.wake != nil else { return }
        scheduler.disarm(&accounts[name]!.wake)
    }

    func timerFired(_ name: String) {
        guard let account = accounts[name] else { return }
        if scheduler.isDue(account.wake, machine: account.machine, at: clock.now()) {
            startRefresh(name)
        } else {
            schedule(name)  // woke early (the clock moved back): sleep again until the true instant
        }
    }

    /// The safety net under the per-account timers: a wall-clock jump or a suspend can make a
    /// timer late, and a late refresh means a dead token.
    func armRecheck() {
        guard !isShutDown else { return }
        scheduler.armRecheck(now: clock.now(), fire: hop { await $0.recheckFired() })
    }

    func recheckFired() {
        scheduler.recheckFired()
        recheck()
        armRecheck()
    }

    /// Starts every refresh that is due by the wall clock now.
    public func recheck() {
        let now = clock.now()
        for (name, account) in accounts.configured where account.machine.isRefreshDue(at: now) {
            startRefresh(name)
        }
        refreshDueScopedTokens(at: now)
    }
}
