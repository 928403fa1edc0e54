import TokendCore

// The one place where a request's fields are checked (docs/protocol.md lists the rules). Type
// errors (a string where a number goes) are caught earlier, when the line is decoded into
// `Request`; here are the rules per op: which fields are required, ranges, and allowed values.
// Each failure is a `bad_request` that names the op and the field.

extension TokenArgs {
    /// `min_valid` default: a minute covers a script's typical API call.
    public static let defaultMinValid: Double = 60
    /// Upper bound on `min_valid`: a day. Longer asks cannot be met by any provider we know.
    public static let maximumMinValid: Double = 86_400
}

extension LoginArgs {
    /// Default of a login's `timeout` (`SharedDefaults`, which tokenctl shares).
    public static let defaultTimeout: Double = SharedDefaults.loginTimeout
    /// Upper bound on a login's `timeout`: half an hour covers a device code's usual life; a
    /// login left open longer only holds a loopback port for nothing.
    public static let maximumTimeout: Double = 1800
}

extension Command {
    /// Checks `request`'s fields for its op. An unknown op is `unsupported_op`; everything else
    /// that is wrong is `bad_request` naming the field.
    public init(_ request: Request) throws(TokendError) {
        guard let op = Op(rawValue: request.op) else {
            throw TokendError(.unsupportedOp, "unknown op \"\(request.op.prefix(64))\"; hello lists the supported ones")
        }
        let fields = FieldReader(op: op, request: request)
        switch op {
        case .hello: self = .hello
        case .reload: self = .reload
        case .token:
            let account = try fields.account()
            let minValid = try fields.seconds(request.minValid, "min_valid", in: 0...TokenArgs.maximumMinValid)
            let timeout = try fields.timeout()
            try fields.checkTokenScope()
            self = .token(TokenArgs(
                account: account, minValid: minValid, kind: request.kind, timeout: timeout, scope: request.scope, audience: request.audience))
        case .list: self = .list(StatusArgs(account: request.account))
        case .status: self = .status(StatusArgs(account: request.account))
        case .refresh: self = .refresh(RefreshArgs(account: try fields.account(), timeout: try fields.timeout()))
        case .import:
            let account = try fields.account()
            self = .import(try fields.importArgs(account: account))
        case .logout: self = .logout(LogoutArgs(account: try fields.account()))
        case .watch: self = .watch(WatchArgs(account: request.account, profile: request.profile == true))
        case .login:
            let account = try fields.account()
            self = .login(try fields.loginArgs(account: account))
        case .account:
            let account = try fields.account()
            self = .account(AccountArgs(account: account, action: try fields.accountAction()))
        }
    }
}

/// Reads one request's fields for one op, throwing the `bad_request` that names a bad one.
private struct FieldReader {
    let op: Op
    let request: Request

    func failure(_ field: String, _ rule: String) -> TokendError {
        TokendError(.badRequest, "\(op.rawValue): \"\(field)\" \(rule)")
    }

    func account() throws(TokendError) -> String {
        guard let name = request.account, !name.isEmpty else { throw failure("account", "is required") }
        return name
    }

    func seconds(_ value: Double?, _ field: String, default fallback: Double, in range: ClosedRange<Double>) throws(TokendError) -> Double {
        try seconds(value, field, in: range) ?? fallback
    }

    /// `value` checked against `range`; nil when the request left it out.
    func seconds(_ value: Double?, _ field: String, in range: ClosedRange<Double>) throws(TokendError) -> Double? {
        guard let value else { return nil }
        guard value.isFinite, range.contains(value) else {
            throw failure(field, "must be a number of seconds from \(Int(saturating: range.lowerBound)) to \(Int(saturating: range.upperBound))")
        }
        return value
    }

    /// How long to wait for a refresh: `timeout`, else 30 s.
    func timeout() throws(TokendError) -> Double {
        try seconds(request.timeout, "timeout", default: Command.defaultTimeout, in: 0...Command.maximumTimeout)
    }

    /// How long a sign-in may take: `timeout`, else five minutes.
    func loginTimeout() throws(TokendError) -> Double {
        try seconds(request.timeout, "timeout", default: LoginArgs.defaultTimeout, in: 1...LoginArgs.maximumTimeout)
    }

    /// `scope` and `audience` as one key, checked by `TokenScope` (its rules: bounded length,
    /// RFC 6749 scope characters); its message gets the op in front like every other.
    func checkTokenScope() throws(TokendError) {
        do {
            _ = try TokenScope(scope: request.scope, audience: request.audience)
        } catch {
            throw TokendError(error.code, "\(op.rawValue): \(error.message)")
        }
    }

    /// The session an `import` carries: a refresh token, optionally tokens minted with it
    /// (`ImportArgs.tokens` keeps those whose expiry is known).
    func importArgs(account: String) throws(TokendError) -> ImportArgs {
        guard let refreshToken = request.refreshToken?.trimmed, !refreshToken.isEmpty else { throw failure("refresh_token", "is required") }
        if let text = request.expiresAt, Timestamp.parse(text) == nil {
            throw failure("expires_at", "must be an RFC 3339 time like 2026-01-02T03:04:05Z")
        }
        return ImportArgs(
            account: account, refreshToken: refreshToken, idToken: request.idToken, accessToken: request.accessToken, expiresAt: request.expiresAt,
            timeout: try timeout())
    }

    /// The `login` request's fields: every missing or contradictory one named.
    func loginArgs(account: String) throws(TokendError) -> LoginArgs {
        let names = LoginMethod.allCases.map(\.rawValue).joined(separator: ", ")
        guard let methodName = request.method else { throw failure("method", "is required (one of: \(names))") }
        guard let method = LoginMethod(rawValue: methodName) else { throw failure("method", "must be one of: \(names)") }
        let timeout = try loginTimeout()
        let email = request.email?.trimmed
        if request.create == true, method != .email { throw failure("create", "only goes with method email") }
        if method.needsEmail, email?.isEmpty != false { throw failure("email", "is required for method \(method.rawValue)") }
        let secret = method.secretIsToken ? request.secret?.trimmed : request.secret
        if let needed = method.neededSecret, secret?.isEmpty != false {
            throw failure("secret", "(\(needed)) is required for method \(method.rawValue)")
        }
        var login = LoginArgs(
            account: account, method: method, email: email, create: request.create ?? false, secret: secret, scopes: request.scopes, timeout: timeout)
        login.factor = try factor(for: method)
        if method == .secondFactor {
            guard let handle = request.handle, !handle.isEmpty else { throw failure("handle", "is required for method second_factor") }
            guard SecondFactor.isPlausibleCode(secret ?? "") else { throw failure("secret", "must be the code: 4 to 10 digits") }
            login.handle = handle
        } else if request.handle != nil {
            throw failure("handle", "only goes with method second_factor")
        }
        if method == .google || method == .idp {
            login.identityProvider = try identityProvider(method)
            login.device = request.device ?? false
        } else {
            try refuseIdentityProviderFields()
        }
        return login
    }

    /// `factor` picks the second factor of a sign-in that may meet one (`email`, `idp`).
    func factor(for method: LoginMethod) throws(TokendError) -> String? {
        guard let factor = request.factor else { return nil }
        guard [.email, .google, .idp].contains(method) else { throw failure("factor", "only goes with method email, google or idp") }
        guard !factor.isEmpty, factor.count <= 128, factor.allSatisfy({ $0.isASCII && !$0.isWhitespace }) else {
            throw failure("factor", "must be an enrollment id, as tokenctl account mfa list shows it")
        }
        return factor
    }

    /// `idp` and `device` belong to method `idp` (and `google`) alone.
    func refuseIdentityProviderFields() throws(TokendError) {
        if request.idp != nil { throw failure("idp", "only goes with method idp") }
        if request.device != nil { throw failure("device", "only goes with method idp") }
    }

    /// The provider id of method `idp` (`google` is `google.com`), checked before any provider
    /// is asked: it goes into a URL form and into messages.
    func identityProvider(_ method: LoginMethod) throws(TokendError) -> String {
        if method == .google {
            if let id = request.idp, id != "google.com" { throw failure("idp", "must be google.com (or absent) with method google") }
            return "google.com"
        }
        guard let id = request.idp?.trimmed, !id.isEmpty else { throw failure("idp", "is required for method idp (google.com, microsoft.com, github.com, oidc.NAME)") }
        if let problem = IdentityProviderID.problem(with: id) { throw failure("idp", problem) }
        return id
    }

    /// The `account` op's `action` and the fields it needs.
    func accountAction() throws(TokendError) -> AccountArgs.Action {
        let names = AccountAction.allCases.map(\.rawValue).joined(separator: ", ")
        guard let actionName = request.action else { throw failure("action", "is required (one of: \(names))") }
        guard let action = AccountAction(rawValue: actionName) else { throw failure("action", "must be one of: \(names)") }
        switch action {
        case .show: return .show(timeout: try timeout())
        case .verifyEmail: return .verifyEmail(timeout: try timeout())
        case .resetPassword:
            let email = request.email?.trimmed
            return .resetPassword(email: email?.isEmpty == true ? nil : email)
        case .upgrade:
            switch LoginMethod(rawValue: request.method ?? LoginMethod.email.rawValue) {
            case .email:
                try refuseIdentityProviderFields()
                let timeout = try timeout()
                guard let email = request.email?.trimmed, !email.isEmpty else { throw failure("email", "is required for upgrade with method email") }
                guard let password = request.secret, !password.isEmpty else {
                    throw failure("secret", "(the new password) is required for upgrade with method email")
                }
                return .upgradeWithEmail(email: email, password: password, timeout: timeout)
            case let method? where method == .google || method == .idp:
                return .upgradeWithIdentityProvider(try identityProvider(method), device: request.device ?? false, timeout: try loginTimeout())
            default:
                throw failure("method", "must be email, google or idp for upgrade")
            }
        case .delete: return .delete(confirmed: request.confirm == true, timeout: try timeout())
        case .mfaEnroll:
            guard let handle = request.handle else { return .startSecondFactorEnrollment(timeout: try timeout()) }
            guard let code = request.secret?.trimmed, SecondFactor.isPlausibleCode(code) else {
                throw failure("secret", "(the code: 4 to 10 digits) is required with handle")
            }
            if let name = request.name, let problem = SecondFactor.displayNameProblem(name) { throw failure("name", problem) }
            return .finishSecondFactorEnrollment(handle: handle, code: code, name: request.name, timeout: try timeout())
        case .mfaRemove:
            guard let factor = try factor(for: .email) else { throw failure("factor", "(the enrollment id) is required for mfa_remove") }
            return .removeSecondFactor(factor, timeout: try timeout())
        }
    }
}
