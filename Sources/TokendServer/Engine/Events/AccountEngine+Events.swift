import Logging
import TokendCore
import TokendKeyring
import TokendProtocol
import TokendProviders

/// What the engine tells watchers (`watch`, hooks, systemd's status line) and the log: each
/// happening once to each, with names and codes, never a token.
extension AccountEngine {
    func publishRefreshed(_ name: String, tokens: TokenSet, previous: TokenSet?, at now: Date, took: Int) {
        let expiresAt = tokens.expiresAt.map(Timestamp.format)
        logger.info("refreshed", metadata: ["account": "\(name)", "expires_at": "\(expiresAt ?? "unknown")", "took_ms": "\(took)"])
        var event = AccountEvent(.refreshed, account: name, at: now)
        event.expiresAt = tokens.expiresAt
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
        var event = AccountEvent(kind, account: name, at: now)
        event.failure = failure
        event.retryAt = retryAt
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
        var event = AccountEvent(.userChanged, account: name, at: clock.now())
        event.reason = reason
        event.signInProvider = after.signInProvider
        event.email = after.email
        hub.publish(event)
    }

    /// Auth state for watchers: the user's session is gone.
    func publishSignedOut(_ name: String, reason: String) {
        var event = AccountEvent(.signedOut, account: name, at: clock.now())
        event.reason = reason
        hub.publish(event)
    }

    /// The keyring's mood changed: said once to the log and to watchers.
    func publishKeyringState(_ state: KeyringState, was previous: KeyringState) {
        let now = clock.now()
        switch state {
        case .available:
            logger.info("keyring usable again", metadata: ["was": "\(previous.rawValue)"])
            hub.publish(AccountEvent(.keyringUnlocked, account: nil, at: now))
        case .locked:
            logger.warning("keyring (\(SecretServiceProvider.current)) is locked and nothing here has unlocked it: \(SecretServiceProvider.current.unlockAdvice ?? KeyringError.unlockAdvice); sessions are kept in memory and written back once it is unlocked")
            hub.publish(AccountEvent(.keyringLocked, account: nil, at: now))
        case .unavailable:
            logger.warning("no usable Secret Service; sessions are kept in memory until one answers")
            hub.publish(AccountEvent(.keyringUnavailable, account: nil, at: now))
        case .needsConfirmation:
            logger.warning("the Secret Service (\(SecretServiceProvider.current.description)) wants tokend's access confirmed, or did not answer in time (as when it waits on a dialog): \(SecretServiceProvider.current.confirmationAdvice); sessions are kept in memory and written back once it answers")
            hub.publish(AccountEvent(.keyringNeedsConfirmation, account: nil, at: now))
        }
    }
}
