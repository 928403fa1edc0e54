import TokendCore

// A command as the client sends it: the request it stands for, and its line. What the daemon's
// decoder (Command+Decoding.swift) reads back is the same command; `CommandRoundTripTests`
// holds every op to that.

extension Command {
    /// The wire request for this command under `id`. Fields the daemon defaults when absent are
    /// left out only where the arguments hold no value (`min_valid`); flags go out only when set.
    public func request(id: RequestID?) -> Request {
        var request = Request(op: op.rawValue, id: id)
        switch self {
        case .hello, .reload: break
        case .token(let args):
            request.account = args.account
            request.minValid = args.requestedMinValid
            request.kind = args.kind
            request.timeout = args.timeout
            request.scope = args.scope
            request.audience = args.audience
        case .list(let args), .status(let args):
            request.account = args.account
        case .refresh(let args):
            request.account = args.account
            request.timeout = args.timeout
        case .import(let args):
            request.account = args.account
            request.refreshToken = args.refreshToken
            request.idToken = args.idToken
            request.accessToken = args.accessToken
            request.expiresAt = args.expiresAt
            request.timeout = args.timeout
        case .login(let args):
            request.account = args.account
            request.method = args.method.rawValue
            request.email = args.email
            request.create = args.create ? true : nil
            request.secret = args.secret
            request.scopes = args.scopes
            request.timeout = args.timeout
            request.idp = args.identityProvider
            request.device = args.device ? true : nil
            request.factor = args.factor
            request.handle = args.handle
        case .account(let args):
            request.account = args.account
            request.action = args.action.verb.rawValue
            args.action.fill(&request)
        case .logout(let args):
            request.account = args.account
        case .watch(let args):
            request.account = args.account
            request.profile = args.profile ? true : nil
        }
        return request
    }

    /// The line to send: a `token` command by hand (`TokenExchangeCoding`, tokenctl's shell
    /// path), any other through the encoder.
    public func line(id: RequestID?) -> [UInt8] {
        if case .token(let args) = self, let line = TokenExchangeCoding.requestLine(args, id: id) { return line }
        return WireCoding.encodeLine(request(id: id))
    }
}

extension AccountArgs.Action {
    /// The fields the action carries besides `action`.
    fileprivate func fill(_ request: inout Request) {
        switch self {
        case .show(let timeout), .verifyEmail(let timeout):
            request.timeout = timeout
        case .resetPassword(let email):
            request.email = email
        case .upgradeWithEmail(let email, let password, let timeout):
            request.method = LoginMethod.email.rawValue
            request.email = email
            request.secret = password
            request.timeout = timeout
        case .upgradeWithIdentityProvider(let id, let device, let timeout):
            request.method = LoginMethod.idp.rawValue
            request.idp = id
            request.device = device ? true : nil
            request.timeout = timeout
        case .delete(let confirmed, let timeout):
            // Sent either way, as tokenctl always has: the reply without it says what would go.
            request.confirm = confirmed
            request.timeout = timeout
        case .startSecondFactorEnrollment(let timeout):
            request.timeout = timeout
        case .finishSecondFactorEnrollment(let handle, let code, let name, let timeout):
            request.handle = handle
            request.secret = code
            request.name = name
            request.timeout = timeout
        case .removeSecondFactor(let factor, let timeout):
            request.factor = factor
            request.timeout = timeout
        }
    }
}
