import TokendCore

/// `login`: how to sign in, with what the method needs. Secrets are never described.
public struct LoginArgs: Sendable, Equatable {
    public var account: String
    /// As sent: `google` stays `google` (the daemon signs in with `idp` google.com).
    public var method: LoginMethod
    public var email: String?
    /// Method `email`: sign up instead of signing in.
    public var create: Bool
    /// A password or custom token. Never logged or echoed.
    public var secret: String?
    /// Scopes to ask for instead of the configured ones (OpenID Connect).
    public var scopes: [String]?
    /// How long the user has to finish.
    public var timeout: Double
    /// Methods `idp` and `google`: the identity provider's id (`google.com` for `google`).
    public var identityProvider: String?
    /// Methods `idp` and `google`: the provider's device grant instead of the browser.
    public var device: Bool
    /// Methods `email`, `google`, `idp`: the second factor to use when the user has several.
    public var factor: String?
    /// Method `second_factor`: the daemon's handle for the pending sign-in (the code is `secret`).
    public var handle: String?

    /// Default of a login's `timeout` (`SharedDefaults`, which tokenctl shares).
    public static let defaultTimeout: Double = SharedDefaults.loginTimeout
    /// Upper bound on a login's `timeout`: half an hour covers a device code's usual life; a
    /// login left open longer only holds a loopback port for nothing.
    public static let maximumTimeout: Double = 1800

    public init(
        account: String, method: LoginMethod, email: String? = nil, create: Bool = false, secret: String? = nil, scopes: [String]? = nil,
        timeout: Double = defaultTimeout, identityProvider: String? = nil, device: Bool = false, factor: String? = nil, handle: String? = nil
    ) {
        self.account = account
        self.method = method
        self.email = email
        self.create = create
        self.secret = secret
        self.scopes = scopes
        self.timeout = timeout
        self.identityProvider = identityProvider
        self.device = device
        self.factor = factor
        self.handle = handle
    }
}

extension LoginArgs: CommandArguments {
    /// Every missing or contradictory field named.
    public init(_ request: FieldReader) throws(TokendError) {
        account = try request.account()
        let names = LoginMethod.allCases.map(\.rawValue).joined(separator: ", ")
        guard let methodName = request.string(.method) else { throw request.failure(.method, "is required (one of: \(names))") }
        guard let method = LoginMethod(rawValue: methodName) else { throw request.failure(.method, "must be one of: \(names)") }
        self.method = method
        timeout = try request.loginTimeout()
        email = request.string(.email)?.trimmed
        create = request.boolean(.create) ?? false
        if create, method != .email { throw request.failure(.create, "only goes with method email") }
        if method.needsEmail, email?.isEmpty != false { throw request.failure(.email, "is required for method \(method.rawValue)") }
        secret = method.secretIsToken ? request.string(.secret)?.trimmed : request.string(.secret)
        if let needed = method.neededSecret, secret?.isEmpty != false {
            throw request.failure(.secret, "(\(needed)) is required for method \(method.rawValue)")
        }
        scopes = request.fields.strings(.scopes)
        factor = try request.factor(for: method)
        handle = nil
        if method == .secondFactor {
            guard let handle = request.string(.handle), !handle.isEmpty else { throw request.failure(.handle, "is required for method second_factor") }
            guard SecondFactor.isPlausibleCode(secret ?? "") else { throw request.failure(.secret, "must be the code: 4 to 10 digits") }
            self.handle = handle
        } else if request.string(.handle) != nil {
            throw request.failure(.handle, "only goes with method second_factor")
        }
        identityProvider = nil
        device = false
        if method == .google || method == .idp {
            identityProvider = try request.identityProvider(method)
            device = request.boolean(.device) ?? false
        } else {
            try request.refuseIdentityProviderFields()
        }
    }

    public func write(to fields: inout RequestFields) {
        fields.set(.account, account)
        fields.set(.method, method.rawValue)
        fields.set(.email, email)
        fields.set(.create, create ? true : nil)
        fields.set(.secret, secret)
        fields.set(.scopes, scopes)
        fields.set(.timeout, timeout)
        fields.set(.idp, identityProvider)
        fields.set(.device, device ? true : nil)
        fields.set(.factor, factor)
        fields.set(.handle, handle)
    }
}

// The rules of sign-in fields, which `login` and `account upgrade` share.
extension FieldReader {
    /// How long a sign-in may take: `timeout`, else five minutes.
    func loginTimeout() throws(TokendError) -> Double {
        try seconds(.timeout, in: 1...LoginArgs.maximumTimeout) ?? LoginArgs.defaultTimeout
    }

    /// `factor` picks the second factor of a sign-in that may meet one (`email`, `idp`).
    func factor(for method: LoginMethod) throws(TokendError) -> String? {
        guard let factor = string(.factor) else { return nil }
        guard [.email, .google, .idp].contains(method) else { throw failure(.factor, "only goes with method email, google or idp") }
        guard !factor.isEmpty, factor.count <= 128, factor.allSatisfy({ $0.isASCII && !$0.isWhitespace }) else {
            throw failure(.factor, "must be an enrollment id, as tokenctl account mfa list shows it")
        }
        return factor
    }

    /// `idp` and `device` belong to method `idp` (and `google`) alone.
    func refuseIdentityProviderFields() throws(TokendError) {
        if string(.idp) != nil { throw failure(.idp, "only goes with method idp") }
        if boolean(.device) != nil { throw failure(.device, "only goes with method idp") }
    }

    /// The provider id of method `idp` (`google` is `google.com`), checked before any provider
    /// is asked: it goes into a URL form and into messages.
    func identityProvider(_ method: LoginMethod) throws(TokendError) -> String {
        if method == .google {
            if let id = string(.idp), id != "google.com" { throw failure(.idp, "must be google.com (or absent) with method google") }
            return "google.com"
        }
        guard let id = string(.idp)?.trimmed, !id.isEmpty else {
            throw failure(.idp, "is required for method idp (google.com, microsoft.com, github.com, oidc.NAME)")
        }
        if let problem = IdentityProviderID.problem(with: id) { throw failure(.idp, problem) }
        return id
    }
}
