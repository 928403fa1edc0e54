import TokendCore

/// `token`: a bearer token for `account` that stays valid for `minValid` seconds.
public struct TokenArgs: Sendable, Equatable {
    public var account: String
    /// Seconds the token must stay valid. Left off the line when it is the default.
    public var minValid: Double
    /// Nil: the account's default kind.
    public var kind: TokenKind?
    public var timeout: Double
    /// `scope` and `audience` as the request gave them (checked by `TokenScope` when decoded).
    public var scope: String?
    public var audience: String?

    /// `min_valid` when the request names none: a minute covers a script's typical API call.
    public static let defaultMinValid: Double = 60

    /// The fields of a `token` line, sorted by wire name: the order JSONEncoder's `.sortedKeys`
    /// writes, which the hand-written codec (`TokenExchangeCoding`) keeps, so both write the same
    /// bytes; it reads and writes exactly these, and leaves any other line to the Codable path.
    public static let fields: [RequestField] = [.account, .audience, .id, .kind, .minValid, .op, .scope, .timeout]

    public init(
        account: String, minValid: Double = defaultMinValid, kind: TokenKind? = nil, timeout: Double = Command.defaultTimeout, scope: String? = nil,
        audience: String? = nil
    ) {
        self.account = account
        self.minValid = minValid
        self.kind = kind
        self.timeout = timeout
        self.scope = scope
        self.audience = audience
    }

    /// The narrower scopes and/or audience asked for; nil: the account's own token. Parsed where
    /// it is read (the daemon), so a client and the plain `token` path never pay for it; a decoded
    /// command's were checked, so a nil here is never a refusal.
    public var narrowing: TokenScope? {
        guard scope != nil || audience != nil else { return nil }
        return try? TokenScope(scope: scope, audience: audience)
    }
}

extension TokenArgs: CommandArguments {
    /// The fields as they are, defaults for those left out: what tokenctl's options set (the
    /// daemon checks them, as it checks every client's).
    public init(fields: RequestFields) {
        self.init(
            account: fields.string(.account) ?? "", minValid: fields.number(.minValid) ?? Self.defaultMinValid, kind: fields.tokenKind(.kind),
            timeout: fields.number(.timeout) ?? Command.defaultTimeout, scope: fields.string(.scope), audience: fields.string(.audience))
    }

    public init(_ request: FieldReader) throws(TokendError) {
        _ = try request.account()
        _ = try request.seconds(.minValid)
        _ = try request.timeout()
        self.init(fields: request.fields)
        // `scope` and `audience` as one key, checked by `TokenScope` (its rules: bounded length,
        // RFC 6749 scope characters); its message gets the op in front like every other.
        do {
            _ = try TokenScope(scope: scope, audience: audience)
        } catch {
            throw TokendError(error.code, "\(request.op.rawValue): \(error.message)")
        }
    }

    public func write(to fields: inout RequestFields) {
        fields.set(.account, account)
        fields.set(.minValid, minValid == Self.defaultMinValid ? nil : minValid)
        fields.set(.kind, kind)
        fields.set(.timeout, timeout)
        fields.set(.scope, scope)
        fields.set(.audience, audience)
    }
}
