import Testing
@testable import TokendCore
import TokendTestClock

/// An account's state under long random runs of every input, in any order a daemon can see them:
/// answers to current and stale tickets, keyring failures, sessions given and forgotten, reloads.
/// After each step the state keeps what the engine relies on (docs/architecture.md, "The engine"),
/// and a `token` request asked of it then gets nothing it must never hand out.
@Suite struct AccountStateInvariantTests {
    typealias AccountState = AccountTransitionTests.AccountState
    typealias Settings = AccountTransitionTests.Settings
    typealias Failure = AccountTransitionTests.KeyringFailure

    /// One run: the account, the tickets it handed out (answered in any order, some twice) and
    /// the saves it asked for.
    struct Run {
        var account: AccountState
        var draws: SplitMix
        let clock = ManualClock()
        var refreshes: [AccountTicket] = []
        var saves: [(TokenSet, AccountTicket, RefreshOutcome)] = []
        var counter = 0
        /// The kinds of effect the run produced: a run that never reaches a save proves little.
        var effectsSeen: Set<String> = []
        /// The tokens served, plain and narrowed: a run that serves none checks nothing of it.
        var served = (plain: 0, narrowed: 0)

        init(seed: UInt64) {
            draws = SplitMix(seed: seed)
            account = AccountState(new: Settings(), provider: AccountTransitionTests.UncalledProvider(), incarnation: 1)
        }

        mutating func fresh(_ prefix: String) -> String {
            counter += 1
            return "\(prefix)-\(counter)"
        }

        mutating func outcome() -> RefreshOutcome {
            let failure = RefreshFailure(code: "TOKEN_EXPIRED", message: "TOKEN_EXPIRED")
            switch Int.random(in: 0..<6, using: &draws) {
            case 0: return .refreshed(IssuedTokens(refreshToken: fresh("rt"), idToken: fresh("id"), expiresIn: 3600))
            case 1: return .refreshed(IssuedTokens(idToken: fresh("id"), expiresIn: 3600))
            case 5: return .refreshed(IssuedTokens(idToken: fresh("id"), accessToken: fresh("at"), expiresIn: 3600, scopes: ["read"]))
            case 2: return .transient(RefreshFailure(code: "http_503", message: "HTTP 503"), retryAfter: nil)
            case 3: return .needsLogin(failure)
            default: return .misconfigured(RefreshFailure(code: "invalid_scope", message: "invalid_scope"))
            }
        }

        mutating func keyring() -> Result<Void, Failure> {
            Bool.random(using: &draws) ? .success(()) : .failure(Failure(Bool.random(using: &draws) ? "locked" : "timed_out"))
        }

        /// Any input, current or stale.
        mutating func input() -> TokendCore.AccountInput<Settings, AccountTransitionTests.UncalledProvider, Failure> {
            let now = clock.now()
            let draw = Double.random(in: 0..<1, using: &draws)
            switch Int.random(in: 0..<12, using: &draws) {
            case 0:
                let scope = Bool.random(using: &draws) ? TokenScope(scopes: ["read"]) : nil
                return .refreshWanted(force: Bool.random(using: &draws), narrowedTo: scope, requested: Bool.random(using: &draws), at: now)
            case 1: return .woke(at: now)
            case 2 where !refreshes.isEmpty, 3 where !refreshes.isEmpty:
                // Mostly the refresh in flight; sometimes an older one, answered late.
                let ticket = Int.random(in: 0..<4, using: &draws) == 0 ? refreshes.randomElement(using: &draws)! : refreshes.last!
                return .refreshAnswered(ticket, outcome(), at: now, jitterDraw: draw)
            case 4 where !saves.isEmpty:
                let (tokens, ticket, answer) = Int.random(in: 0..<4, using: &draws) == 0 ? saves.randomElement(using: &draws)! : saves.last!
                return .persisted(ticket, answer: answer, tokens, keyring(), at: now, jitterDraw: draw)
            case 5:
                let read: Result<TokenSet?, Failure>
                switch Int.random(in: 0..<4, using: &draws) {
                case 0: read = .success(TokenSet(refreshToken: fresh("stored")))
                case 1: read = .success(nil)
                case 2: read = .failure(Failure("corrupt"))
                default: read = .failure(Failure("locked"))
                }
                return .storedSessionRead(account.ticket(), read, jitterDraw: draw)
            case 6: return .sessionGiven(TokenSet(refreshToken: fresh("given")), committing: nil, at: now, jitterDraw: draw)
            case 7:
                let held = account.machine.tokens ?? TokenSet(refreshToken: fresh("gone"))
                return .sessionStored(held, keyring())
            case 8: return .sessionForgotten(reason: "logged out", committing: nil)
            case 9:
                let endpoint = Bool.random(using: &draws) ? Settings().endpoint : "http://127.0.0.1:9099/securetoken.googleapis.com/v1/token k"
                return .reconfigured(Settings(endpoint: endpoint), provider: AccountTransitionTests.UncalledProvider())
            default:
                _ = clock.advance(by: Double.random(in: 0..<900, using: &draws))
                return .woke(at: clock.now())
            }
        }

        /// One step; what it broke, if anything.
        mutating func step() -> String? {
            let wasRefreshing = account.isRefreshing
            let input = input()
            let effects = account.apply(input)
            for effect in effects {
                effectsSeen.insert(String(String(describing: effect).prefix { $0 != "(" }))
                switch effect {
                case .callProvider(let ticket):
                    if wasRefreshing { return "a second refresh started while one was in flight: \(input)" }
                    if !ticket.isRefresh || !account.isRefreshing { return "a provider call without a refresh in flight: \(input)" }
                    refreshes.append(ticket)
                case .save(let tokens, let ticket, let answer):
                    if !ticket.isRefresh { return "a save for a ticket that is no refresh's: \(input)" }
                    saves.append((tokens, ticket, answer))
                default:
                    break
                }
            }
            if account.unsaved, account.machine.tokens == nil { return "unsaved without a held session after \(input)" }
            if account.writeBackDeferred, account.machine.tokens == nil { return "a write-back queued without a held session after \(input)" }
            if account.machine.tokens.map({ $0.endpoint != account.configuration.endpoint }) ?? false {
                return "a held session bound to another endpoint after \(input)"
            }
            return served(after: input)
        }

        /// A `token` request now: a token it gets is the held session's own (or one narrowed from
        /// it), of the kind asked, valid for `minValid` from now.
        mutating func served(after input: Any) -> String? {
            let now = clock.now()
            let kind: TokenKind? = [nil, .id, .access].randomElement(using: &draws)!
            let scope = Int.random(in: 0..<3, using: &draws) == 0 ? TokenScope(scopes: ["read"]) : nil
            let minValid = Double.random(in: 0..<4000, using: &draws)
            var wanted = TokenWanted(kind: kind, scope: scope, minValid: minValid, start: now, timeout: Double.random(in: 0..<30, using: &draws))
            guard case .grant(let grant, _, _) = account.serve(&wanted, at: now) else { return nil }
            if scope == nil { served.plain += 1 } else { served.narrowed += 1 }
            if grant.expiresAt.timeIntervalSince(now) < minValid || grant.expiresAt <= now {
                return "a token valid until \(grant.expiresAt) served at \(now) for \(minValid) s after \(input)"
            }
            if let scope {
                let entry = account.scopedTokens.entries[scope]
                if grant.kind != .access || entry?.token != grant.token || entry?.generation != account.machine.generation {
                    return "a narrowed token not minted from the held session after \(input)"
                }
            } else if grant.kind != kind ?? account.configuration.defaultTokenKind || account.machine.tokens?.token(grant.kind)?.value != grant.token {
                return "a token that is not the held session's \(kind.map { "\($0)" } ?? "default") token after \(input)"
            }
            return nil
        }
    }

    @Test func everyRunKeepsTheInvariants() {
        var effectsSeen: Set<String> = []
        var served = (plain: 0, narrowed: 0)
        for seed: UInt64 in 0..<40 {
            var run = Run(seed: seed)
            for number in 0..<400 {
                if let broken = run.step() {
                    Issue.record("seed \(seed), step \(number): \(broken)")
                    break
                }
            }
            effectsSeen.formUnion(run.effectsSeen)
            served = (served.plain + run.served.plain, served.narrowed + run.served.narrowed)
        }
        #expect(served.plain > 0 && served.narrowed > 0, "served \(served)")
        // Every path the invariants guard was walked: refreshes, both kinds of write, deletions,
        // sessions set aside by a reload and read again.
        let walked: Set<String> = ["callProvider", "save", "deferWriteBack", "deleteStored", "setAside", "readStoredSession", "noteKeyring"]
        #expect(walked.isSubset(of: effectsSeen), "never produced: \(walked.subtracting(effectsSeen).sorted())")
    }
}
