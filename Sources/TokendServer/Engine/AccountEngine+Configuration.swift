import TokendCore

extension AccountEngine {
    /// Starts, updates and stops accounts to match `configuration` (removed ones keep their
    /// keyring items; added ones read theirs).
    public func apply(_ configuration: Configuration) async {
        await keyring.restore(adopt(configuration))
    }

    /// The part of `apply` that never waits on the keyring; returns the accounts whose stored
    /// sessions `restore(_:)` then reads — the daemon does that after it listens, so a stuck
    /// Secret Service can never keep the socket closed.
    public func adopt(_ configuration: Configuration) -> [String] {
        for name in accounts.names where configuration.accounts[name] == nil {
            disarm(name)
            if accounts.remove(name) { startKeyringPoll() }
            wake(name)
            logger.info("account removed from the configuration; its keyring item stays", metadata: ["account": "\(name)"])
        }
        var added: [String] = []
        for (name, accountConfiguration) in configuration.accounts.sorted(by: { $0.key < $1.key }) {
            guard let account = accounts[name] else {
                nextIncarnation += 1
                accounts[name] = AccountState(new: accountConfiguration, provider: makeProvider(accountConfiguration), incarnation: nextIncarnation)
                added.append(name)
                continue
            }
            guard account.configuration != accountConfiguration else { continue }
            // The read is the daemon's to start (after it listens), not this call's.
            let effects = transition(name, .reconfigured(accountConfiguration, provider: makeProvider(accountConfiguration)))
            for effect in effects where effect != .readStoredSession { performAtOnce(effect, for: name) }
            if effects.contains(.readStoredSession) { added.append(name) }
        }
        return added
    }
}
