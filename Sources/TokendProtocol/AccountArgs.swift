import TokendCore

/// `account`: one Firebase account-management action.
public struct AccountArgs: Sendable, Equatable {
    public enum Action: Sendable, Equatable {
        case show(timeout: Double)
        case verifyEmail(timeout: Double)
        /// `email` nil: the session's own address.
        case resetPassword(email: String?)
        case upgradeWithEmail(email: String, password: String, timeout: Double)
        /// A sign-in at an identity provider (browser, or its device grant), streamed like a login.
        case upgradeWithIdentityProvider(String, device: Bool, timeout: Double)
        /// `confirmed` false: answer what would be deleted instead.
        case delete(confirmed: Bool, timeout: Double)
        /// `mfa_enroll` without a handle: start a TOTP enrollment.
        case startSecondFactorEnrollment(timeout: Double)
        /// `mfa_enroll` with the handle, the code and the factor's display name (nil: the
        /// daemon's default).
        case finishSecondFactorEnrollment(handle: String, code: String, name: String?, timeout: Double)
        /// `mfa_remove`: withdraw the factor of this enrollment id.
        case removeSecondFactor(String, timeout: Double)

        /// The wire's verb for the action.
        public var verb: AccountAction {
            switch self {
            case .show: .show
            case .verifyEmail: .verifyEmail
            case .resetPassword: .resetPassword
            case .upgradeWithEmail, .upgradeWithIdentityProvider: .upgrade
            case .delete: .delete
            case .startSecondFactorEnrollment, .finishSecondFactorEnrollment: .mfaEnroll
            case .removeSecondFactor: .mfaRemove
            }
        }
    }

    public var account: String
    public var action: Action

    public init(account: String, action: Action) {
        self.account = account
        self.action = action
    }
}

extension AccountArgs: CommandArguments {
    public init(_ request: FieldReader) throws(TokendError) {
        account = try request.account()
        action = try Action(request)
    }

    public func write(to fields: inout RequestFields) {
        fields.set(.account, account)
        fields.set(.action, action.verb.rawValue)
        action.write(to: &fields)
    }
}

extension AccountArgs.Action {
    /// The `action` and the fields it needs.
    init(_ request: FieldReader) throws(TokendError) {
        let names = AccountAction.allCases.map(\.rawValue).joined(separator: ", ")
        guard let actionName = request.string(.action) else { throw request.failure(.action, "is required (one of: \(names))") }
        guard let action = AccountAction(rawValue: actionName) else { throw request.failure(.action, "must be one of: \(names)") }
        switch action {
        case .show: self = .show(timeout: try request.timeout())
        case .verifyEmail: self = .verifyEmail(timeout: try request.timeout())
        case .resetPassword:
            let email = request.string(.email)?.trimmed
            self = .resetPassword(email: email?.isEmpty == true ? nil : email)
        case .upgrade:
            switch LoginMethod(rawValue: request.string(.method) ?? LoginMethod.email.rawValue) {
            case .email:
                try request.refuseIdentityProviderFields()
                let timeout = try request.timeout()
                guard let email = request.string(.email)?.trimmed, !email.isEmpty else {
                    throw request.failure(.email, "is required for upgrade with method email")
                }
                guard let password = request.string(.secret), !password.isEmpty else {
                    throw request.failure(.secret, "(the new password) is required for upgrade with method email")
                }
                self = .upgradeWithEmail(email: email, password: password, timeout: timeout)
            case let method? where method == .google || method == .idp:
                self = .upgradeWithIdentityProvider(
                    try request.identityProvider(method), device: request.boolean(.device) ?? false, timeout: try request.loginTimeout())
            default:
                throw request.failure(.method, "must be email, google or idp for upgrade")
            }
        case .delete: self = .delete(confirmed: request.boolean(.confirm) == true, timeout: try request.timeout())
        case .mfaEnroll:
            guard let handle = request.string(.handle) else {
                self = .startSecondFactorEnrollment(timeout: try request.timeout())
                return
            }
            guard let code = request.string(.secret)?.trimmed, SecondFactor.isPlausibleCode(code) else {
                throw request.failure(.secret, "(the code: 4 to 10 digits) is required with handle")
            }
            let name = request.string(.name)
            if let name, let problem = SecondFactor.displayNameProblem(name) { throw request.failure(.name, problem) }
            self = .finishSecondFactorEnrollment(handle: handle, code: code, name: name, timeout: try request.timeout())
        case .mfaRemove:
            guard let factor = try request.factor(for: .email) else {
                throw request.failure(.factor, "(the enrollment id) is required for mfa_remove")
            }
            self = .removeSecondFactor(factor, timeout: try request.timeout())
        }
    }

    /// The fields the action carries besides `action`.
    func write(to fields: inout RequestFields) {
        switch self {
        case .show(let timeout), .verifyEmail(let timeout), .startSecondFactorEnrollment(let timeout):
            fields.set(.timeout, timeout)
        case .resetPassword(let email):
            fields.set(.email, email)
        case .upgradeWithEmail(let email, let password, let timeout):
            fields.set(.method, LoginMethod.email.rawValue)
            fields.set(.email, email)
            fields.set(.secret, password)
            fields.set(.timeout, timeout)
        case .upgradeWithIdentityProvider(let id, let device, let timeout):
            fields.set(.method, LoginMethod.idp.rawValue)
            fields.set(.idp, id)
            fields.set(.device, device ? true : nil)
            fields.set(.timeout, timeout)
        case .delete(let confirmed, let timeout):
            // Sent either way, as tokenctl always has: the reply without it says what would go.
            fields.set(.confirm, confirmed)
            fields.set(.timeout, timeout)
        case .finishSecondFactorEnrollment(let handle, let code, let name, let timeout):
            fields.set(.handle, handle)
            fields.set(.secret, code)
            fields.set(.name, name)
            fields.set(.timeout, timeout)
        case .removeSecondFactor(let factor, let timeout):
            fields.set(.factor, factor)
            fields.set(.timeout, timeout)
        }
    }
}
