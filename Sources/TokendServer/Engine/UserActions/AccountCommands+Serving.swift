import TokendCore

/// `token` and `refresh`: loops over single looks at the account (`AccountEngine.look(_:wanting:)`,
/// `look`), each one turn of the actor, waiting between them for the account to change.
extension AccountCommands {
    /// A token of `kind` valid for at least `minValid` seconds (with `scope`, an access token
    /// narrowed to it), refreshing and waiting at most `timeout` seconds when none will do.
    public func token(account name: String, kind: TokenKind?, scope: TokenScope? = nil, minValid: Double, timeout: Double) async -> Result<TokenGrant, TokendError> {
        var wanted = TokenWanted(kind: kind, scope: scope, minValid: minValid, start: clock.now(), timeout: timeout)
        while true {
            let look: TokenLook
            (look, wanted) = await engine.look(name, wanting: wanted)
            switch look {
            case .answer(let answer): return answer
            case .waitForChange(let until, let seen): await engine.waitForChange(name, until: until, after: seen)
            }
        }
    }

    /// Forces a refresh now (or joins the one in flight) and waits for its outcome; during a
    /// backoff the answer is `unavailable` with the retry time.
    public func refresh(account name: String, timeout: Double) async -> Result<Date?, TokendError> {
        let start = clock.now()
        let deadline = start.addingTimeInterval(timeout)
        // Right after a start (a socket-activated one: this request started it) the stored session
        // is still being read: wait for it, as `token` does. A scoped grant holding the refresh
        // slot is not this refresh: its outcome is not ours. Another may take the slot between the
        // wait and the start (concurrent scoped requests), so the start checks again and we wait again.
        while true {
            // At the deadline (or shutdown) the wait is over whatever holds the slot.
            let waited = await waitWhile(name, until: deadline) { $0.restoring || $0.scopedTokens.inFlight != nil }
            switch await engine.forceRefresh(name, honouringBackoff: true, besideScopedGrants: waited == true) {
            case .refused(let refusal): return .failure(refusal)
            case .slotHeldByScopedGrant: continue
            case .started: return await refreshOutcome(name, since: start, deadline: deadline)
            }
        }
    }

    /// Waits until no refresh is in flight, then reports how the latest one went.
    func refreshOutcome(_ name: String, since start: Date, deadline: Date) async -> Result<Date?, TokendError> {
        switch await waitWhile(name, until: deadline, { $0.isRefreshing }) {
        case nil: return .failure(Advice.shuttingDown)
        case false?: return .failure(Advice.refreshStillRunning(name))
        case true?: return await engine.refreshOutcome(name, since: start)
        }
    }

    /// Waits while `condition` holds for the account: true once it does not (or the account is
    /// gone), false if it still does at `deadline`, nil at shutdown.
    func waitWhile(_ name: String, until deadline: Date, _ condition: @escaping @Sendable (AccountState) -> Bool) async -> Bool? {
        while true {
            let (holds, seen) = await engine.look(name, condition)
            guard let holds else { return nil }
            guard holds else { return true }
            if clock.now() >= deadline { return false }
            await engine.waitForChange(name, until: deadline, after: seen)
        }
    }
}

/// The engine's answer to one look at a `token` request (`AccountEngine.look(_:wanting:)`): the request's
/// answer, or a wait for the account to change until `until`, past the change count `seen`.
enum TokenLook: Sendable {
    case answer(Result<TokenGrant, TokendError>)
    case waitForChange(until: Date, seen: UInt64)
}
