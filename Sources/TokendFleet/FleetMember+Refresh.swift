import FoundationEssentials
import TokendCore
import TokendProviders

extension FleetMember {
    /// A fleet account's refresh (`FleetProvider`): another member's newer session if etcd has
    /// one; else the provider's answer if this member holds the account's election with time to
    /// spare on its lease, written to etcd (compare-and-swap on the revision read) before it is
    /// returned; else the holder's next session, waited for. Never a refresh behind the fleet's back.
    public func refresh(_ account: String, presented: String, with provider: any TokenProvider) async -> RefreshOutcome {
        // Known unreachable (the last call, or the lease's keep-alive every third of its TTL,
        // failed): said at once, not after a deadline on every endpoint.
        if !reachable { return Self.outcome(FleetError(.unreachable, "its last answer failed")) }
        // Before the read: what the campaign below compares is then at most a round trip old.
        guard await grantedLease() != nil else {
            return .transient(RefreshFailure(
                code: "fleet_no_lease", message: "etcd has not granted this member its fleet lease yet; it refreshes nothing until it has one"), retryAfter: nil)
        }
        // The engine counts the lifetimes it is given from when it started this refresh, just
        // before this call: an adopted session's are measured from here, not from its end.
        let called = clock.now()
        let session: TokenSet
        let revision: Int64
        do throws(FleetError) {
            guard case .session(let found, let at) = try await read(account) else {
                return .transient(RefreshFailure(
                    code: "fleet_no_session",
                    message: "the fleet holds no session for this account: log in or import it on any member (this member serves what it holds while valid)"), retryAfter: nil)
            }
            (session, revision) = (found, at)
        } catch {
            return Self.outcome(error)
        }
        if session.refreshToken != presented || known[account]?.revision != revision {
            // Another member's session: held from now on, and nothing is asked of the provider.
            known[account] = KnownSession(Self.skewed(session), revision: revision)
            return Self.adoption(session, at: called)
        }
        let holds: Bool
        do throws(FleetError) {
            holds = try await campaign(account)
        } catch {
            note(error)
            return Self.outcome(error)
        }
        guard holds, let left = leaseTimeLeft(), left >= Self.minimumRefreshBudget else {
            return await follow(account, from: revision, calledAt: called)
        }
        // The provider call is cut at this member's own deadline, before the lease can expire at
        // etcd and another member can be elected: two refreshes of one token never overlap.
        let sent = clock.now()
        let abandoned = RefreshOutcome.transient(RefreshFailure(
            code: "fleet_lease_deadline", message: "the provider did not answer before this member's fleet lease could expire; the refresh was abandoned"), retryAfter: nil)
        let outcome = try? await FleetDeadline.race(left, clock: clock, timers: timers) { await provider.refresh(refreshToken: presented) }
        guard let outcome = outcome ?? nil else { return abandoned }
        guard case .refreshed(let issued) = outcome else { return outcome }
        let next = session.merging(issued, sentAt: sent, at: clock.now())
        do throws(FleetError) {
            try await write(next, account: account, expecting: revision, asHolder: true)
        } catch {
            // The provider rotated already: the new session is served from here (it is valid), and
            // written by the keyring's retry once etcd answers, still only over `revision`.
            unwritten[account] = revision
            logger.error("the refreshed session could not be written to the fleet; this member serves it and writes it when etcd answers", metadata: [
                "account": "\(account)", "error": "\(error)",
            ])
        }
        return outcome
    }

    /// A follower's refresh: the holder's next session once the watch brings it, or after a
    /// lease's time the session held if it is still good (an import's check on a follower).
    func follow(_ account: String, from revision: Int64, calledAt called: Date) async -> RefreshOutcome {
        await waitForChange(of: account, from: revision, until: clock.now().addingTimeInterval(settings.lease))
        let now = clock.now()
        if let held = known[account], held.revision != revision || (held.tokens.expiresAt ?? now) > now {
            // Already skewed: its expiries are taken as they are.
            return Self.adoption(held.tokens, at: called, skew: 0)
        }
        return .transient(RefreshFailure(
            code: "fleet_follower", message: "another member of the fleet refreshes this account and its new session has not arrived; is that member up?"), retryAfter: nil)
    }

    /// The session a follower's engine takes, with lifetimes left as the writer's clock says at
    /// `called` (when the engine's refresh began, which it counts them from), less the members'
    /// clock skew: they can only come out shorter than the truth.
    static func adoption(_ session: TokenSet, at called: Date, skew: Double = clockSkewAllowance) -> RefreshOutcome {
        let lefts = [session.idTokenExpiresAt, session.accessTokenExpiresAt].compactMap { $0?.timeIntervalSince(called) }
        let left = lefts.min().map { max(0, $0 - skew) }
        return .refreshed(IssuedTokens(
            refreshToken: session.refreshToken, idToken: session.idToken, accessToken: session.accessToken, expiresIn: left, scopes: session.scopes))
    }

    /// The session as another member's engine holds it: each expiry `clockSkewAllowance` earlier.
    static func skewed(_ session: TokenSet) -> TokenSet {
        var tokens = session
        tokens.idTokenExpiresAt = tokens.idTokenExpiresAt?.addingTimeInterval(-clockSkewAllowance)
        tokens.accessTokenExpiresAt = tokens.accessTokenExpiresAt?.addingTimeInterval(-clockSkewAllowance)
        return tokens
    }

    /// What a fleet failure does to a refresh: unreachable is transient (tokens held are served
    /// while valid, then 75); a wrong key or a refusal is the configuration's to fix.
    static func outcome(_ error: FleetError) -> RefreshOutcome {
        let failure = RefreshFailure(code: error.code.rawValue, message: error.message)
        switch error.code {
        case .unreachable, .conflict:
            return .transient(RefreshFailure(
                code: error.code.rawValue, message: "the fleet (etcd) cannot be reached: \(error.message); tokens held are served while valid"), retryAfter: nil)
        case .wrongKey, .refused, .badFile:
            return .misconfigured(failure)
        }
    }

    /// A keyring write of a fleet account's session (`FleetStore`): nothing for etcd when it is
    /// the session the fleet has, or its refresh token is the fleet's or an older one of the
    /// fleet's (a write-back the keyring held back must never put a rotated-away token back); a
    /// holder's refresh that could not be written, with its compare-and-swap; else a session the
    /// user gave here.
    public func store(_ tokens: TokenSet, account: String) async throws(FleetError) {
        if known[account]?.matches(tokens) == true { return }
        if let revision = unwritten.removeValue(forKey: account) {
            do throws(FleetError) {
                try await write(tokens, account: account, expecting: revision, asHolder: false)
            } catch {
                if error.code == .unreachable { unwritten[account] = revision }
                throw error
            }
            return
        }
        if known[account]?.refreshToken == tokens.refreshToken { return }
        if wasSeen(tokens.refreshToken, account: account) {
            logger.notice("an older session of the fleet's is kept locally only", metadata: ["account": "\(account)"])
            return
        }
        try await give(tokens, account: account)
    }
}
