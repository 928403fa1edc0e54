import Dispatch
import TokendCore
import TokendKeyring
import TokendProtocol

extension AccountEngine {
    /// Reads the stored sessions of `names` all at once, not one after another: behind a frozen
    /// Secret Service every read ends at the same keyring timeout instead of one timeout each.
    public func restore(_ names: [String]) async {
        await withTaskGroup(of: Void.self) { group in
            for name in names { group.addTask { await self.restore(name) } }
        }
    }

    /// What an account says until its first keyring read has answered.
    static func notReadYet(_ name: String) -> TokendError {
        TokendError(.keyringUnavailable, "the keyring item of account \"\(name)\" is still being read; try again in a moment")
    }

    /// Loads the account's stored session at start (or when it is added by a reload).
    ///
    /// The read is applied only if nothing happened to the account meanwhile: a logout, an
    /// import, or a reload that removed and re-added it while the keyring answered would
    /// otherwise be undone by what the read found.
    func restore(_ name: String) async {
        if let setAside = setAsideWrites.removeValue(forKey: name) {
            _ = noteKeyring(await store.save(setAside, account: name).map { _ in () }, account: name)
        }
        guard let before = accounts[name] else { return }
        let loaded = await store.load(account: name)
        // Only this incarnation's read ends its wait: a re-added account has a read of its own.
        defer { if accounts[name]?.incarnation == before.incarnation { restoring.remove(name) } }
        guard var account = accounts[name], account.incarnation == before.incarnation,
            account.machine.generation == before.machine.generation
        else {
            logger.info("a keyring read finished after the account changed; its result is dropped", metadata: ["account": "\(name)"])
            return
        }
        switch loaded {
        case .success(var tokens?):
            let endpoint = account.configuration.endpoint
            if let bound = tokens.endpoint, bound != endpoint {
                account.machine.markBoundElsewhere(reason: Self.boundElsewhere(stored: bound, account: account.configuration))
                logger.error("the stored session was issued by another endpoint than the configured one; it is not used", metadata: ["account": "\(name)"])
            } else {
                // An item from before sessions were bound adopts the endpoint it is first read with.
                tokens.endpoint = endpoint
                account.machine.restore(tokens, unit: random())
            }
            _ = noteKeyring(.success(()), account: name)
        case .success(nil):
            account.machine.markNothingStored()
            _ = noteKeyring(.success(()), account: name)
        case .failure(let error) where error.code == .corrupt:
            // The keyring answered; the item will read the same next time. Said once, not polled.
            let problem = error.tokendError(account: name)
            account.machine.markUnreadableItem(reason: problem.message)
            _ = noteKeyring(.success(()), account: name)
            logger.error("the stored session cannot be read; the account needs a new import or login", metadata: ["account": "\(name)"])
        case .failure(let error):
            // Locked is not empty: the account waits for the keyring instead of asking for a login.
            account.machine.markKeyringUnreadable(error.tokendError(account: name))
            _ = noteKeyring(.failure(error), account: name)
        }
        accounts[name] = account
        schedule(name)
        wake(name)
    }

    /// Records what a keyring operation said about the keyring; returns whether it succeeded.
    /// Any failure starts the poll that writes back and reloads once the keyring is usable.
    func noteKeyring(_ result: Result<Void, KeyringError>, account name: String) -> Bool {
        let state: KeyringState
        switch result {
        case .success: state = .available
        case .failure(let error): state = error.code == .locked ? .locked : (error.code == .failed || error.code == .corrupt ? keyringState : .unavailable)
        }
        if state != keyringState {
            let previous = keyringState
            keyringState = state
            let now = Timestamp.format(clock.now())
            switch state {
            case .available:
                logger.info("keyring usable again", metadata: ["was": "\(previous.rawValue)"])
                hub.publish(Event(event: .keyringUnlocked, account: nil, at: now))
            case .locked:
                logger.warning("keyring is locked; sessions are kept in memory and written back once it is unlocked")
                hub.publish(Event(event: .keyringLocked, account: nil, at: now))
            case .unavailable:
                logger.warning("no usable Secret Service; sessions are kept in memory until one answers")
                hub.publish(Event(event: .keyringUnavailable, account: nil, at: now))
            }
        }
        if case .failure(let error) = result {
            logger.warning("keyring operation failed", metadata: ["account": "\(name)", "code": "\(error.code.rawValue)", "error": "\(error.message)"])
            startKeyringPoll()
        }
        return (try? result.get()) != nil
    }

    var hasKeyringWork: Bool {
        accounts.values.contains { account in
            if account.unsaved { return true }
            if case .awaitingKeyring = account.machine.phase { return true }
            return false
        }
    }

    func startKeyringPoll() {
        guard keyringPoll == nil else { return }
        let timer = DispatchSource.makeTimerSource(queue: timerQueue)
        timer.schedule(deadline: .now() + .seconds(Self.keyringPollInterval), repeating: .seconds(Self.keyringPollInterval))
        timer.setEventHandler { [weak self] in
            Task { await self?.pollKeyring() }
        }
        timer.resume()
        keyringPoll = timer
    }

    /// While something waits for the keyring: probe it, and the moment it is usable write back
    /// unsaved sessions and read the ones we could not read — without waiting for a refresh.
    func pollKeyring() async {
        guard !keyringPollRunning else { return }
        keyringPollRunning = true
        defer { keyringPollRunning = false }
        guard hasKeyringWork else {
            keyringPoll?.cancel()
            keyringPoll = nil
            return
        }
        let state = await store.state()
        guard state == .available else {
            if state != keyringState { _ = noteKeyring(.failure(KeyringError(state == .locked ? .locked : .unavailable, "keyring \(state.rawValue)")), account: "-") }
            return
        }
        for name in accounts.keys.sorted() {
            guard let account = accounts[name] else { continue }
            if case .awaitingKeyring = account.machine.phase {
                await restore(name)
            } else if account.unsaved, let tokens = account.machine.tokens {
                let saved = await store.save(tokens, account: name)
                // Only clear the flag if nothing newer arrived while we wrote.
                if accounts[name]?.machine.tokens == tokens {
                    accounts[name]?.unsaved = !noteKeyring(saved, account: name)
                    if accounts[name]?.unsaved == false { logger.info("session written back to the keyring", metadata: ["account": "\(name)"]) }
                }
            } else if account.unsaved {
                accounts[name]?.unsaved = false
            }
        }
    }

    /// Why a stored session is not used: where it came from, where the account points now, and
    /// how to resolve it. Hosts only: the API key stays out of messages and logs.
    static func boundElsewhere(stored: String, account: AccountConfiguration) -> String {
        func host(_ endpoint: String) -> String {
            endpoint.split(separator: " ").first { $0.hasPrefix("http") }.map(String.init) ?? "another endpoint"
        }
        let storedHost = host(stored)
        let configuredHost = host(account.endpoint)
        let what = storedHost == configuredHost ? "another project or client at \(storedHost)" : storedHost
        return "the stored session was issued by \(what), but the account now points at \(configuredHost); nothing was sent. "
            + "Restore the configuration (and check FIREBASE_AUTH_EMULATOR_HOST in tokend's environment), "
            + "or run `tokenctl import \(account.name)` to replace the session"
    }
}
