import TokendCore
import TokendProtocol

/// Turns request lines into replies. It never touches a socket (ssh-agent's split): the
/// connection layer frames bytes and writes what this returns, so the whole protocol is testable
/// without one.
public struct RequestHandler: Sendable {
    public enum Reply: Sendable {
        case response(Response)
        /// From here on the connection carries only these lines (`watch`, `login`). It closes
        /// when they end; a client that goes away ends them (and cancels what produces them).
        case stream(AsyncStream<StreamLine>)
    }

    /// One line of a streamed reply: a response (carries `ok`), an event or a login's progress.
    public enum StreamLine: Sendable, Equatable {
        case response(Response)
        case event(Event)
        case progress(LoginProgress)

        public var encoded: [UInt8] {
            switch self {
            case .response(let response): WireCoding.encodeLine(response)
            case .event(let event): WireCoding.encodeLine(event)
            case .progress(let progress): WireCoding.encodeLine(progress)
            }
        }
    }

    /// `min_valid` default (docs/protocol.md): a minute covers a script's typical API call.
    public static let defaultMinValid: Double = 60
    /// Upper bound on `min_valid`: a day. Longer asks cannot be met by any provider we know.
    public static let maximumMinValid: Double = 86_400

    public let engine: AccountEngine
    public let hub: EventHub
    public let version: String

    public init(engine: AccountEngine, hub: EventHub, version: String) {
        self.engine = engine
        self.hub = hub
        self.version = version
    }

    public func handle(line: [UInt8]) async -> Reply {
        switch WireCoding.decodeRequest(line) {
        case .failure(let failure):
            return .response(.failure(TokendError(.badRequest, failure.message), id: failure.id))
        case .success(let request):
            return await handle(request)
        }
    }

    public func handle(_ request: Request) async -> Reply {
        do {
            return try await dispatch(request)
        } catch {
            return .response(.failure(error, id: request.id))
        }
    }

    func dispatch(_ request: Request) async throws(TokendError) -> Reply {
        guard let op = Op(rawValue: request.op) else {
            throw TokendError(.unsupportedOp, "unknown op \"\(request.op.prefix(64))\"; hello lists the supported ones")
        }
        var response = Response(id: request.id)
        switch op {
        case .hello:
            response.protocol = protocolVersion
            response.version = version
            response.capabilities = Op.allCases.map(\.rawValue)
        case .token:
            let name = try account(of: request)
            let minValid = try number(request.minValid, "min_valid", default: Self.defaultMinValid, maximum: Self.maximumMinValid)
            let timeout = try timeout(of: request)
            let grant: TokenGrant
            if let scope = try TokenScope(scope: request.scope, audience: request.audience) {
                grant = try await engine.token(account: name, kind: request.kind, scope: scope, minValid: minValid, timeout: timeout).get()
            } else {
                grant = try await engine.token(account: name, kind: request.kind, minValid: minValid, timeout: timeout).get()
            }
            fill(&response, account: name, expiresAt: grant.expiresAt)
            response.token = grant.token
            response.kind = grant.kind
        case .list, .status:
            response.accounts = try await engine.statuses(account: request.account).get()
        case .refresh:
            let name = try account(of: request)
            let expiresAt = try await engine.refresh(account: name, timeout: try timeout(of: request)).get()
            fill(&response, account: name, expiresAt: expiresAt)
        case .import:
            let name = try account(of: request)
            let tokens = try Self.tokenSet(from: request)
            let expiresAt = try await engine.install(account: name, tokens: tokens, timeout: try timeout(of: request)).get()
            fill(&response, account: name, expiresAt: expiresAt)
        case .logout:
            let name = try account(of: request)
            let revocation = try await engine.logout(account: name).get()
            response.account = name
            switch revocation {
            case .revoked: response.revocation = "revoked"
            case .unsupported(let reason):
                response.revocation = "unsupported"
                response.warning = reason
            case .failed(let failure):
                response.revocation = "failed"
                response.warning = "the provider did not revoke the session (\(failure.code): \(failure.message))"
            case nil: break
            }
        case .watch:
            if let name = request.account { _ = try await engine.statuses(account: name).get() }
            if let name = request.account {
                response.watching = [name]
            } else {
                response.watching = await engine.accountNames
            }
            // Profile fields (email) only for a client that asked for them.
            let profile = request.profile == true
            return .stream(hub.subscribe(account: request.account, first: .response(response)) { event in
                var event = event
                if !profile { event.email = nil }
                return .event(event)
            })
        case .login:
            return .stream(try login(request))
        case .account:
            return try await accountAction(request)
        }
        return .response(response)
    }

    func fill(_ response: inout Response, account: String, expiresAt: Date?) {
        response.account = account
        if let expiresAt {
            response.expiresAt = Timestamp.format(expiresAt)
            response.expiresIn = Int(saturating: expiresAt.timeIntervalSince(engine.clock.now()).rounded(.down))
        }
    }

    func account(of request: Request) throws(TokendError) -> String {
        guard let name = request.account, !name.isEmpty else {
            throw TokendError(.badRequest, "field \"account\" is required for op \(request.op)")
        }
        return name
    }

    func timeout(of request: Request) throws(TokendError) -> Double {
        try number(request.timeout, "timeout", default: AccountEngine.defaultTimeout, maximum: AccountEngine.maximumTimeout)
    }

    func number(_ value: Double?, _ field: String, default fallback: Double, maximum: Double) throws(TokendError) -> Double {
        guard let value else { return fallback }
        guard value.isFinite, value >= 0, value <= maximum else {
            throw TokendError(.badRequest, "field \"\(field)\" must be a number of seconds from 0 to \(Int(maximum))")
        }
        return value
    }

    /// The session an `import` carries: a refresh token, optionally tokens minted with it.
    static func tokenSet(from request: Request) throws(TokendError) -> TokenSet {
        guard let refreshToken = request.refreshToken?.trimmed, !refreshToken.isEmpty else {
            throw TokendError(.badRequest, "field \"refresh_token\" is required for op import")
        }
        var explicitExpiry: Date? = nil
        if let text = request.expiresAt {
            guard let date = Timestamp.parse(text) else {
                throw TokendError(.badRequest, "field \"expires_at\" must be an RFC 3339 time like 2026-01-02T03:04:05Z")
            }
            explicitExpiry = date
        }
        var tokens = TokenSet(refreshToken: refreshToken)
        // A token whose expiry is unknown is not kept: it could not be served safely anyway.
        if let id = request.idToken, let expiry = JWTClaims(token: id)?.expiresAt ?? explicitExpiry {
            tokens.idToken = id
            tokens.idTokenExpiresAt = expiry
            tokens.issuedAt = JWTClaims(token: id)?.issuedAt
        }
        if let access = request.accessToken, let expiry = JWTClaims(token: access)?.expiresAt ?? explicitExpiry {
            tokens.accessToken = access
            tokens.accessTokenExpiresAt = expiry
        }
        return tokens
    }
}
