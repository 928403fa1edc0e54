@testable import TokendCore

/// What a request for one kind gets from a session alone, in the terms the machine's tests are
/// written in. `AccountState.serve` is the one place a `token` request is decided: this asks it
/// for an account holding exactly this machine, with the request's deadline out of reach.
enum MachineAnswer: Equatable {
    case token(String, expiresAt: Date)
    case refresh
    /// A refresh is in flight.
    case wait
    /// Backing off: nothing happens before this instant.
    case retryAt(Date)
    case refuse(TokendError)
}

extension AccountMachine {
    /// `requestStart` nil: a request that has not waited yet (no refresh was sent since it began).
    func answer(_ kind: TokenKind, minValid: Double, at now: Date, requestStart: Date? = nil) -> MachineAnswer {
        typealias Account = AccountState<AccountTransitionTests.Settings, AccountTransitionTests.UncalledProvider, AccountTransitionTests.KeyringFailure>
        var account = Account(configuration: .init(), machine: self, provider: .init(), incarnation: 1)
        var wanted = TokenWanted(kind: kind, scope: nil, minValid: minValid, start: requestStart ?? .distantFuture, timeout: 1e9)
        let serving = account.serve(&wanted, at: now)
        if case .backingOff(let until, _) = phase, serving == .wait || serving == .refresh(force: false) { return .retryAt(until) }
        switch serving {
        // Without a promise: the held token taken despite a refresh in flight (the state's
        // patience); the session alone says to wait for the refresh.
        case .grant(_, nil, _): return .wait
        case .grant(let grant, _, _): return .token(grant.token, expiresAt: grant.expiresAt)
        case .fail(let error): return .refuse(error)
        case .refresh: return .refresh
        case .wait: return .wait
        }
    }
}
