import ArgumentParser
import TokendCore
import TokendProtocol

/// The account and token options of every command that hands a token on (`token`, `header`,
/// `exec`, `exec-credential`), and the one request they all make.
struct TokenOptions: ParsableArguments {
    @Argument(help: "The account, as named in config.toml.", completion: .custom(AccountCompletion.names))
    var account: String

    @Option(help: ArgumentHelp(
        "Seconds the token must stay valid; tokend refreshes first when it has less (tokend's default: 60).",
        valueName: "seconds"))
    var minValid: Double?

    @Option(help: "Which token: the ID token or the access token (default: id for Firebase, access for OIDC).")
    var kind: Tokenctl.KindArgument?

    @Option(help: ArgumentHelp(
        "OpenID Connect: an access token narrowed to these space-separated scopes (a subset of the session's).",
        valueName: "scopes"))
    var scope: String?

    @Option(help: ArgumentHelp("OpenID Connect: an access token for this API (RFC 8707 resource).", valueName: "uri"))
    var audience: String?

    @OptionGroup var connection: ConnectionOptions

    /// The options as the plain values both paths share (`TokenFields`). Setting them assigns
    /// every property wrapper: a command the fast path builds has only their definitions.
    var fields: TokenFields {
        get {
            var fields = TokenFields(socket: connection.socket)
            fields.request.set(.minValid, minValid)
            fields.request.set(.kind, kind?.tokenKind)
            fields.request.set(.scope, scope)
            fields.request.set(.audience, audience)
            fields.request.set(.timeout, connection.timeoutOption)
            return fields
        }
        set {
            minValid = newValue.request.number(.minValid)
            kind = newValue.request.tokenKind(.kind).flatMap { Tokenctl.KindArgument(rawValue: $0.rawValue) }
            scope = newValue.request.string(.scope)
            audience = newValue.request.string(.audience)
            var connection = ConnectionOptions()
            connection.socket = newValue.socket
            connection.timeoutOption = newValue.request.number(.timeout)
            self.connection = connection
        }
    }

    func validate() throws {
        try Self.validate(account: account, fields)
    }

    static func validate(account: String, _ fields: TokenFields) throws {
        try validateAccount(account)
        if let minValid = fields.request.number(.minValid), !(minValid.isFinite && minValid >= 0) {
            throw ValidationError("--min-valid must be zero or a positive number of seconds")
        }
    }

    /// A current token of the account and its expiry, as tokend answered them.
    func fetch(_ context: CommandContext) throws(TokenctlError) -> TokenGrant {
        try Self.fetch(FastArguments(self), context)
    }

    /// The same from plain values, for the fast path that never builds a `TokenOptions`.
    static func fetch(_ arguments: FastArguments, _ context: CommandContext) throws(TokenctlError) -> TokenGrant {
        let daemon = try DaemonConnection(settings: arguments.connection, context: context)
        let (response, _) = try daemon.call(arguments.fields.command(account: arguments.account))
        return try TokenGrant(response)
    }
}

/// A token as tokenctl passes it on: one word, with its expiry.
struct TokenGrant {
    var account: String
    var token: String
    /// RFC 3339 UTC, as tokend sent it (it always does for a token).
    var expiresAt: String?

    init(_ response: Response) throws(TokenctlError) {
        guard let token = response.token, !token.isEmpty else { throw .protocolMismatch("a reply without a token") }
        // `$(tokenctl token …)`, a header line or an environment variable must hold exactly one
        // word: never pass on something else as a token.
        guard !token.utf8.contains(where: { $0 <= 0x20 || $0 == 0x7F }) else {
            throw .protocolMismatch("a token containing whitespace or control characters")
        }
        if let expiresAt = response.expiresAt, Timestamp.parse(expiresAt) == nil {
            throw .protocolMismatch("a token with an unreadable expires_at")
        }
        self.account = response.account ?? ""
        self.token = token
        self.expiresAt = response.expiresAt
    }
}
