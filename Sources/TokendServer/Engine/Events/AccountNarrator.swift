import Logging
import TokendCore
import TokendKeyring
import TokendProtocol
import TokendProviders

/// What the engine tells watchers (`watch`, hooks, systemd's status line) and the log: each
/// happening once to each, with names and codes, never a token. A value beside the actor: the
/// hub and the logger are safe from any thread, so user actions tell their news without a hop.
struct AccountNarrator: Sendable {
    let hub: EventHub
    let logger: Logger
    let clock: any WallClock

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
        case .reconfigured:
            logger.info("account configuration changed", metadata: account)
        case .repointed:
            logger.error("the account now points at another endpoint; its session is set aside, not sent", metadata: account)
        }
    }

    func publishRefreshed(_ name: String, tokens: TokenSet, previous: TokenSet?, at now: Date, took: Int) {
        let expiresAt = tokens.expiresAt.map(Timestamp.format)
        logger.info("refreshed", metadata: ["account": "\(name)", "expires_at": "\(expiresAt ?? "unknown")", "took_ms": "\(took)"])
        var event = Event(.refreshed, account: name, at: now)
        event.expiresAt = tokens.expiresAt.map(Timestamp.format)
        hub.publish(event)
        publishUserChange(name, from: previous, to: tokens)
    }

    /// A failed refresh, told once to the log and once to watchers.
    func report(
        _ failure: RefreshFailure, of name: String, as kind: Event.Kind, level: Logger.Level, _ message: Logger.Message,
        at now: Date, took: Int, retryAt: Date? = nil
    ) {
        var metadata: Logger.Metadata = ["account": "\(name)", "code": "\(failure.code)", "error": "\(failure.message)", "took_ms": "\(took)"]
        if let retryAt { metadata["retry_in_s"] = "\(Int(saturating: retryAt.timeIntervalSince(now)))" }
        logger.log(level: level, message, metadata: metadata)
        var event = Event(kind, account: name, at: now)
        event.error = failure
        event.retryAt = retryAt.map(Timestamp.format)
        hub.publish(event)
    }

    /// Auth state for watchers: the same user, changed (verified, upgraded) — seen on refresh.
    func publishUserChange(_ name: String, from previous: TokenSet?, to next: TokenSet) {
        guard let before = previous?.idToken.flatMap({ FirebaseClaims(token: $0) }),
            let after = next.idToken.flatMap({ FirebaseClaims(token: $0) }), before.uid == after.uid
        else { return }
        var reason: String?
        if after.emailVerified == true, before.emailVerified != true {
            reason = "email_verified"
        } else if before.email != after.email {
            reason = "email_changed"
        }
        guard let reason else { return }
        var event = Event(.userChanged, account: name, at: clock.now())
        event.reason = reason
        event.signInProvider = after.signInProvider
        event.email = after.email
        hub.publish(event)
    }

    /// Auth state for watchers: the user's session is gone.
    func publishSignedOut(_ name: String, reason: String) {
        var event = Event(.signedOut, account: name, at: clock.now())
        event.reason = reason
        hub.publish(event)
    }

    /// A store's mood changed (`kind`: which; nil from a store that does not say): said once to
    /// the log and to watchers.
    func publishKeyringState(_ state: KeyringState, was previous: KeyringState, store kind: StoreKind?) {
        let now = clock.now()
        // A `pass` or `tpm2` store's own problem and steps (the Secret Service's are below).
        let storeProblem = state == .available ? nil : StoreProblem.current(kind)
        if let problem = storeProblem, let steps = problem.steps {
            logger.warning("session store unusable: \(problem.message): \(steps); sessions are kept in memory and written back once it takes writes", metadata: ["store": "\(kind?.rawValue ?? "-")"])
        }
        switch state {
        case .available:
            logger.info(kind == nil || kind == .secretService ? "keyring usable again" : "session store usable again", metadata: ["was": "\(previous.rawValue)", "store": "\(kind?.rawValue ?? "-")"])
            hub.publish(Event(.keyringUnlocked, account: nil, at: now))
        case .locked:
            if storeProblem == nil { logger.warning("keyring (\(SecretServiceProvider.current)) is locked and nothing here has unlocked it: \(SecretServiceProvider.current.unlockAdvice ?? KeyringError.unlockAdvice); sessions are kept in memory and written back once it is unlocked") }
            hub.publish(Event(.keyringLocked, account: nil, at: now))
        case .unavailable:
            if storeProblem == nil { logger.warning("no usable Secret Service; sessions are kept in memory until one answers") }
            hub.publish(Event(.keyringUnavailable, account: nil, at: now))
        case .needsConfirmation:
            if storeProblem == nil { logger.warning("the Secret Service (\(SecretServiceProvider.current.description)) wants tokend's access confirmed, or did not answer in time (as when it waits on a dialog): \(SecretServiceProvider.current.confirmationAdvice); sessions are kept in memory and written back once it answers") }
            hub.publish(Event(.keyringNeedsConfirmation, account: nil, at: now))
        }
    }

    /// A keyring operation failed (the keyring's own mood is `publishKeyringState`'s).
    func keyringFailed(_ error: KeyringError, account name: String) {
        logger.warning("keyring operation failed", metadata: ["account": "\(name)", "code": "\(error.code.rawValue)", "error": "\(error.message)"])
    }

    /// What the provider did with a refresh token the user gave up (`replaced`: by a login's).
    func revocation(_ outcome: RevocationOutcome, of name: String, replaced: Bool) {
        let session = replaced ? "the replaced session" : "the session"
        switch outcome {
        case .revoked:
            logger.info("\(session) was revoked at the provider", metadata: ["account": "\(name)"])
        case .unsupported(let why):
            logger.debug("\(session) could not be revoked", metadata: ["account": "\(name)", "why": "\(why)"])
        case .failed(let failure):
            logger.warning(
                replaced ? "revoking the replaced session failed" : "revocation at the provider failed; the local session is removed anyway",
                metadata: ["account": "\(name)", "code": "\(failure.code)", "error": "\(failure.message)"])
        }
    }
}
