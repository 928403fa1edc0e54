import TokendCore

extension AccountEngine {
    /// Starts, updates and stops accounts to match `configuration`. Removed accounts stop (their
    /// keyring items stay); changed ones get a new provider and policy; added ones load their
    /// session from the keyring.
    public func apply(_ configuration: Configuration) async {
        await restore(adopt(configuration))
    }

    /// The part of `apply` that never waits on the keyring: accounts are added (showing
    /// `waiting_for_keyring`), changed and removed at once. Returns the accounts whose stored
    /// sessions `restore(_:)` then reads (the added ones, and changed ones holding nothing) — the
    /// daemon does that after it listens, so a stuck Secret Service can never keep the socket closed.
    public func adopt(_ configuration: Configuration) -> [String] {
        for name in accounts.names where configuration.accounts[name] == nil {
            // A session the keyring has not taken yet (it was locked) is still written: with a
            // provider that rotates, the stored refresh token may be dead already.
            disarm(name)
            if let removed = accounts.removeValue(forKey: name), removed.unsaved, let held = removed.machine.tokens {
                accounts[setAside: name] = held
                startKeyringPoll()
            }
            wake(name)
            logger.info("account removed from the configuration; its keyring item stays", metadata: ["account": "\(name)"])
        }
        var added: [String] = []
        for (name, accountConfiguration) in configuration.accounts.sorted(by: { $0.key < $1.key }) {
            if var account = accounts[name] {
                guard account.configuration != accountConfiguration else { continue }
                account.configuration = accountConfiguration
                account.provider = makeProvider(accountConfiguration)
                account.scopedTokens = ScopedTokenCache()  // minted under the old configuration
                account.machine.policy = accountConfiguration.policy
                account.machine.clearMisconfiguration()
                var setAside: TokenSet? = nil
                if let held = account.machine.tokens, held.endpoint != accountConfiguration.endpoint {
                    // The held session may not go to the new endpoint; the keyring keeps it.
                    account.machine.setAside(reason: Advice.boundElsewhere(stored: held.endpoint ?? "", account: accountConfiguration))
                    if account.unsaved { setAside = held }
                    account.unsaved = false
                    logger.error("the account now points at another endpoint; its session is set aside, not sent", metadata: ["account": "\(name)"])
                }
                let reload = account.machine.tokens == nil
                accounts[name] = account
                schedule(name)
                wake(name)
                logger.info("account configuration changed", metadata: ["account": "\(name)"])
                // Written before the account's next read, so the keyring keeps what rotated in memory.
                if let setAside { accounts[setAside: name] = setAside }
                // Nothing held (set aside, or never loaded): the stored session may fit the new endpoint.
                if reload { added.append(name) }
            } else {
                nextIncarnation += 1
                var machine = AccountMachine(policy: accountConfiguration.policy)
                machine.markKeyringUnreadable(Advice.notReadYet(name))
                accounts[name] = Account(
                    configuration: accountConfiguration, machine: machine,
                    provider: makeProvider(accountConfiguration), incarnation: nextIncarnation, restoring: true)
                added.append(name)
            }
        }
        return added
    }
}
