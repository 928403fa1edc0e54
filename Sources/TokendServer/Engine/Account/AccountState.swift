import TokendCore
import TokendProviders

/// One account as the engine holds it: its configuration, its `AccountMachine` and what the
/// engine tracks beside it. A value: every change goes through its transition
/// (AccountTransitions.swift) or one of the user-action steps below; the actor only stores it.
struct AccountState {
    var configuration: AccountConfiguration
    var machine: AccountMachine
    var provider: any TokenProvider
    /// The session in memory has not reached the keyring yet (it was locked or unavailable
    /// when we wrote): written back as soon as the keyring answers again.
    var unsaved = false
    /// The keyring holds this session's refresh token but older ID and access tokens: a
    /// refresh that did not rotate the refresh token is served at once and written back
    /// later, coalesced (AccountEngine+WriteBack.swift).
    var writeBackDeferred = false
    /// Unique across the engine's life: an account removed and added again by reloads is a
    /// new incarnation, so a refresh or a keyring read begun for the old one can never be
    /// applied to the new one (its machine's generations start over).
    var incarnation: UInt64
    /// Set while a browser, device or Google login runs: one interactive login at a time.
    var interactiveLogin = false
    /// User actions (login, import, logout, delete, upgrade) are numbered as they are issued;
    /// a login's session is installed only if no later-issued action has committed yet, so
    /// the newest choice of the user wins whatever order the providers answer in.
    var issuedUserActions: UInt64 = 0
    var committedUserAction: UInt64 = 0
    /// Upgrades setting a password now in flight. Setting a password voids the user's older
    /// refresh tokens (Firebase's `validSince`), so a refresh answered `TOKEN_EXPIRED`
    /// meanwhile is no verdict on the account: the upgrade's answer brings the new session.
    var passwordChangesInFlight = 0
    /// The stored session is being read for the first time: a `token` request waits for that
    /// read (within its timeout) instead of being told the keyring is unreadable.
    var restoring = false
    /// Down-scoped access tokens (AccountState+Serving.swift); dropped with the account
    /// and when its configuration changes.
    var scopedTokens = ScopedTokenCache()
    /// The timer armed for the account's next wake-up (`RefreshScheduler`).
    var wake: RefreshScheduler.Wake?
}

extension AccountState {
    /// An account a configuration adds: it holds nothing until its stored session is read.
    init(new configuration: AccountConfiguration, provider: any TokenProvider, incarnation: UInt64) {
        var machine = AccountMachine(policy: configuration.policy)
        machine.markKeyringUnreadable(Advice.notReadYet(configuration.name))
        self.init(configuration: configuration, machine: machine, provider: provider, incarnation: incarnation, restoring: true)
    }

    /// A user action (login, upgrade, delete, a change of factors) is issued: numbered, so that
    /// its session commits only if no later-issued one has. `interactive`: it holds the account's
    /// one interactive-login slot; `changingPassword`: a refused refresh is no verdict meanwhile.
    mutating func issueUserAction(interactive: Bool, changingPassword: Bool) -> Result<AccountTicket, TokendError> {
        if interactive {
            guard !interactiveLogin else {
                return .failure(TokendError(
                    .unavailable,
                    "a login for \(configuration.name) is already waiting for the user; finish or cancel it (Ctrl-C in its tokenctl) first"))
            }
            interactiveLogin = true
        }
        if changingPassword { passwordChangesInFlight += 1 }
        issuedUserActions += 1
        return .success(ticket(userAction: issuedUserActions))
    }

    /// The user action `ticket` numbers is over: what it held is released, unless the account
    /// was removed meanwhile (a new incarnation has its own).
    mutating func userActionEnded(_ ticket: AccountTicket, interactive: Bool, changingPassword: Bool) {
        guard changes(since: ticket).isDisjoint(with: .removed) else { return }
        if interactive { interactiveLogin = false }
        if changingPassword { passwordChangesInFlight -= 1 }
    }

    /// The last refresh was refused for the API key's restrictions (RefreshClassifier): a
    /// configuration error the config file cannot fix, with the session kept.
    var isBlockedByKeyRestriction: Bool {
        guard case .misconfigured = machine.phase, let code = machine.lastError?.code else { return false }
        return RefreshClassifier.apiKeyRestrictions[code] != nil
    }

    var isRefreshing: Bool {
        if case .refreshing = machine.phase { return true }
        return false
    }

    /// Something waits for the keyring: a session to write back, or one to read.
    var hasKeyringWork: Bool {
        if unsaved, machine.tokens != nil { return true }
        if case .awaitingKeyring = machine.phase { return true }
        return false
    }
}
