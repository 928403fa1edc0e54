import Logging
import TokendCore
import TokendKeyring
import TokendProtocol

// The configuration file, loaded at start and on every reload (SIGHUP, the `reload` op): both
// kinds of reload come through `ReloadQueue`, one at a time, and run `reload()` below.

extension Daemon {
    /// What a load applied, for `prepare` (at start) and the `reload` op's answer.
    struct LoadedConfiguration: Sendable {
        /// At start only: the accounts to read from the keyring once the socket listens (on a
        /// reload they are read before the load returns).
        var added: [String] = []
        /// At start only: the token files the configuration names, kept by the leftover clean-up.
        var tokenFiles: [String] = []
        /// Every account the configuration names, sorted.
        var accounts: [String] = []
        /// At start only: what was loaded, for the consumers' sockets once the main one is ours.
        var configuration: Configuration?
    }

    /// Re-reads the configuration; a broken file keeps the last good one. Returns once the
    /// result is applied, with systemd told `RELOADING=1` before and `READY=1` after.
    func reload() async -> ReloadQueue.Outcome {
        SystemdIntegration.notify(SystemdIntegration.reloadingMessage(), environment: options.environment)
        let outcome = await loadConfiguration(initial: false)
        await updateStatus()
        SystemdIntegration.notify("READY=1", environment: options.environment)
        return outcome
            .map { ReloadSummary(path: configPath, accounts: $0.accounts) }
            // The located problem, as the log has it: file, line, key.
            .mapError { TokendError(.configError, $0.description) }
    }

    /// Loads the configuration file. At start the accounts are only adopted, and returned for
    /// reading from the keyring once the socket listens, with the token files the configuration
    /// names (none when it is broken); on a reload they are read at once.
    func loadConfiguration(initial: Bool) async -> Result<LoadedConfiguration, ConfigurationError> {
        do {
            let configuration = try Configuration.load(path: configPath, environment: options.environment)
            await engine.setConfigurationProblem(nil)
            for warning in configuration.warnings { logger.warning("\(warning)") }
            let tokenFiles = configuration.accounts.values.flatMap { $0.tokenFiles.map(\.path) }
            // Where each account's session lives, before any of them is read or written.
            (store as? StoreRouter)?.apply(configuration.stores)
            // The fleet's member before its accounts: their provider and store go through it.
            try await applyFleet(configuration)
            let added = await engine.adopt(configuration)
            hooks.apply(configuration)
            proxyAccess.apply(configuration)
            await proxies.apply(configuration.proxySettings)
            let accounts = configuration.accounts.keys.sorted()
            if initial { return .success(LoadedConfiguration(added: added, tokenFiles: tokenFiles, accounts: accounts, configuration: configuration)) }
            await engine.keyring.restore(added)
            await consumers.apply(configuration, mainSocket: socketPath)
            logger.info("configuration reloaded", metadata: ["accounts": "\(configuration.accounts.count)"])
            // Only a reload is an event: the first load is the daemon starting, which no watcher
            // or hook can see yet (docs/protocol.md, `config_reloaded`).
            hub.publish(Event(.configReloaded, account: nil, at: engine.clock.now()))
            return .success(LoadedConfiguration(accounts: accounts))
        } catch {
            if initial {
                // Start anyway: with socket activation, a daemon that exits is one that no client
                // can ask what is wrong. Every account request answers config_error with the reason.
                await engine.setConfigurationProblem(error)
                // No account is served, so no file is kept fresh: none stays.
                logger.error("configuration is broken; serving no accounts until it is fixed", metadata: ["error": "\(error)"])
            } else {
                logger.error("configuration is broken; keeping the last good one", metadata: ["error": "\(error)"])
            }
            return .failure(error)
        }
    }
}
