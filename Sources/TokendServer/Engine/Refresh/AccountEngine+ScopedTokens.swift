import Logging
import TokendCore
import TokendKeyring
import TokendProtocol
import TokendProviders

/// Down-scoped access tokens (`token` with `scope` or `audience`, docs/architecture.md "Scoped
/// tokens"): minted by a refresh grant with the account's refresh token, so each grant takes the
/// account's refresh slot (never two grants with one refresh token in flight) and a rotated
/// refresh token is persisted exactly as after a refresh. The tokens themselves live in memory.
extension AccountEngine {
    /// OAuth errors that refuse one narrowed grant, not the session or the client: the scope is
    /// not the grant's (RFC 6749 §5.2) or the audience is not one the provider serves (RFC 8707).
    static let scopeRefusals: Set<String> = ["invalid_scope", "invalid_target"]

    /// An access token narrowed to `scope`, valid for `minValid` seconds: from the cache, else
    /// minted (waiting at most `timeout` seconds). Never a token wider than asked.
    public func token(account name: String, kind requested: TokenKind?, scope: TokenScope, minValid: Double, timeout: Double) async -> Result<TokenGrant, TokendError> {
        guard let initial = accounts[name] else { return .failure(missingAccount(name)) }
        guard initial.configuration.provider.base.descriptor.capabilities.contains(.scopedTokens) else {
            return .failure(TokendError(.badRequest, "\(initial.configuration.kind.rawValue) accounts cannot narrow a token to a scope or an audience: ask without them"))
        }
        guard (requested ?? initial.configuration.defaultTokenKind) == .access else {
            return .failure(TokendError(.badRequest, "scope and audience narrow access tokens, not ID tokens: ask for kind access, or without scope and audience"))
        }
        let start = clock.now()
        let deadline = start.addingTimeInterval(timeout)
        while true {
            guard let account = accounts[name] else { return .failure(missingAccount(name)) }
            let now = clock.now()
            let generation = account.machine.generation
            if let granted = account.machine.tokens?.scopes {
                let missing = scope.notGranted(by: granted)
                guard missing.isEmpty else { return .failure(Self.neverGranted(missing, granted: granted, account: name)) }
            }
            if let entry = account.scopedTokens.token(for: scope, generation: generation, minValid: minValid, at: now) {
                accounts[name]?.scopedTokens.noteUse(of: scope, at: now)
                // Its first use since it was minted makes it one the account's timer refreshes.
                if !entry.askedForSinceMinted { schedule(name) }
                return .success(TokenGrant(token: entry.token, kind: .access, expiresAt: entry.expiresAt))
            }
            if let refusal = account.scopedTokens.refusal(of: scope, since: start) { return .failure(refusal) }
            if let entry = account.scopedTokens.entries[scope], entry.generation == generation, entry.issuedAt >= start {
                // Minted during this request and still too short-lived for it.
                let minted = TokenSet(refreshToken: "", accessToken: entry.token, accessTokenExpiresAt: entry.expiresAt)
                return .failure(AccountMachine.unsatisfiable(kind: .access, minValid: minValid, tokens: minted, now: now))
            }
            switch account.machine.phase {
            case .needsLogin, .misconfigured:
                return .failure(account.machine.phaseError!)
            case .awaitingKeyring(let error):
                guard account.restoring, now < deadline else { return .failure(error) }
            case .backingOff(let until, _):
                if until <= now {
                    startRefresh(name, narrowedTo: scope, requested: true)
                } else if until > deadline {
                    return .failure(Advice.unavailable(lastError: account.machine.lastError, retryAt: until))
                }
            case .idle:
                startRefresh(name, narrowedTo: scope, requested: true)
            case .refreshing:
                break  // the account's single flight: this key's grant starts once it is free
            }
            if now >= deadline {
                return .failure(TokendError(.unavailable, "no token for \(scope) within \(Int(saturating: timeout)) s: a refresh is still running; try again"))
            }
            await waitForChange(name, until: deadline)
        }
    }

    static func neverGranted(_ missing: [String], granted: [String], account name: String) -> TokendError {
        TokendError(.badRequest, "the session of \(name) was never granted \"\(missing.joined(separator: " "))\" (it holds \"\(granted.joined(separator: " "))\"), and a narrowed token cannot be wider: ask for a subset, or add the scope to the account's scopes in config.toml and run: tokenctl login \(name)")
    }

    /// Why a successful narrowed answer is not served: no access token, or a scope wider than
    /// asked (a provider that ignores `scope` on refresh); nil when it is what was asked.
    static func refusal(of issued: IssuedTokens, asked scope: TokenScope) -> TokendError? {
        guard issued.accessToken != nil else {
            return TokendError(.configError, "the provider answered the grant for \(scope) without an access token")
        }
        // RFC 6749 §5.1: an answer without `scope` was granted the scope asked for.
        guard !scope.scopes.isEmpty, let granted = issued.scopes else { return nil }
        let wider = Set(granted).subtracting(scope.scopes).sorted()
        guard !wider.isEmpty else { return nil }
        return TokendError(.configError, "the provider answered the grant for \(scope) with a wider token (also \"\(wider.joined(separator: " "))\"), which tokend does not hand out: the provider may not narrow scopes on refresh")
    }

    /// Waits (until `deadline`) while a scoped grant holds the account's refresh slot: a refresh
    /// asked for then must run after it, not take the grant's outcome for its own.
    func waitOutScopedGrant(_ name: String, until deadline: Date) async {
        while accounts[name]?.scopedTokens.inFlight != nil, clock.now() < deadline {
            await waitForChange(name, until: deadline)
        }
    }
}
