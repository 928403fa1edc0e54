import TokendCore
import TokendProtocol

/// Turns request lines into replies. It never touches a socket (ssh-agent's split): the
/// connection layer frames bytes and writes what this returns, so the whole protocol is testable
/// without one. A line is decoded and checked into a `Command` once (`DecodedRequest`, whichever
/// path reads it) and handed to its op's responder, which asks the engine through a small
/// protocol (docs/architecture.md).
public struct RequestRouter: Sendable {
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

    let services: any EngineServices
    let hub: EventHub
    let version: String
    /// The daemon's file, for `reload`; nil for a router with no file behind it (the fuzzer's,
    /// tests'), which neither lists nor serves the op.
    let configuration: (any ConfigurationService)?
    /// A consumer socket's policy (`ConsumerGate`); nil on the main socket, which keeps every right.
    public private(set) var gate: ConsumerGate?
    /// Where served tokens, refusals and management calls are recorded; nil: nowhere (tests).
    public private(set) var audit: AuditLog?

    public init(engine: AccountEngine, hub: EventHub, version: String, configuration: (any ConfigurationService)? = nil, audit: AuditLog? = nil) {
        self.init(services: engine.commands, hub: hub, version: version, configuration: configuration, audit: audit)
    }

    public init(services: any EngineServices, hub: EventHub, version: String, configuration: (any ConfigurationService)? = nil, audit: AuditLog? = nil) {
        self.services = services
        self.hub = hub
        self.version = version
        self.configuration = configuration
        self.audit = audit
    }

    /// This router behind a consumer's policy: what the consumer's socket serves.
    public func scoped(to gate: ConsumerGate) -> RequestRouter {
        var router = self
        router.gate = gate
        return router
    }

    /// What `hello` lists: every op this router serves (on a consumer socket, those its policy allows).
    var capabilities: [Op] {
        let ops = Op.allCases.filter { $0 != .reload || configuration != nil }
        guard let policy = gate?.policy else { return ops }
        return ops.filter(policy.allows)
    }

    /// Every line gets a reply: a line that is not a request is a `bad_request` carrying the
    /// `id` when it could be read.
    public func handle(line: [UInt8]) async -> Reply {
        await handle(WireCoding.decodeRequest(line))
    }

    /// Answers `hello`, and a plain `token` request whose account holds a token meeting its
    /// `min_valid`, at once and without suspending (`AcceptLoop`, `ConnectionChannelHandler`);
    /// nil for every other request (errors included), which `handle(_:)` answers.
    /// On a consumer socket a request its policy refuses is answered here too: the refusal needs
    /// nothing but the policy. Every answer but `hello`'s is recorded (`AuditLog`).
    public func answerAtOnce(_ request: DecodedRequest, from caller: Caller = .unknown) -> Response? {
        guard case .success(let command) = request.command else { return nil }
        if let gate, case .refused(let error) = gate.check(command) {
            record(command, caller, failure: error)
            return .failure(error, id: request.id)
        }
        switch command {
        case .hello: return HelloResponder(version: version, capabilities: capabilities).handle(id: request.id)
        case .token(let args):
            guard let response = TokenResponder.answerAtOnce(args, id: request.id, session: services) else { return nil }
            audit?.record(caller, op: Op.token.rawValue, account: args.account, kind: response.kind, audience: args.audience, scope: args.scope)
            return response
        case .list, .status, .refresh, .import, .logout, .watch, .login, .account, .reload, .store: return nil
        }
    }

    /// The reply to a request decoded once (`WireCoding.decodeRequest`), whatever path it took.
    public func handle(_ request: DecodedRequest, from caller: Caller = .unknown) async -> Reply {
        let command: Command
        switch request.command {
        case .success(let decoded): command = decoded
        case .failure(let error): return .response(.failure(error, id: request.id))
        }
        if let gate, case .refused(let error) = gate.check(command) {
            record(command, caller, failure: error)
            return .response(.failure(error, id: request.id))
        }
        do {
            let reply = try await self.reply(to: command, id: request.id)
            if case .response(let response) = reply {
                record(command, caller, failure: response.error, kind: response.kind)
                if let gate, command.op == .status || command.op == .list { return .response(gate.visible(response)) }
            } else {
                record(command, caller, failure: nil)
            }
            return reply
        } catch {
            record(command, caller, failure: error)
            return .response(.failure(error, id: request.id))
        }
    }

    /// Records a request's answer, but `hello`'s (it names no account and changes nothing).
    private func record(_ command: Command, _ caller: Caller, failure: TokendError?, kind: TokenKind? = nil) {
        guard let audit, command.op != .hello else { return }
        if case .token(let args) = command {
            audit.record(caller, op: command.op.rawValue, account: args.account, kind: kind ?? args.kind, audience: args.audience, scope: args.scope, failure: failure)
        } else {
            audit.record(caller, op: command.op.rawValue, account: command.account, failure: failure)
        }
    }

    private func reply(to command: Command, id: RequestID?) async throws(TokendError) -> Reply {
        switch command {
        case .hello: .response(HelloResponder(version: version, capabilities: capabilities).handle(id: id))
        case .token(let args): .response(try await TokenResponder(session: services).handle(args, id: id))
        case .list(let args), .status(let args): .response(try await StatusResponder(status: services).handle(args, id: id))
        case .refresh(let args): .response(try await RefreshResponder(session: services).handle(args, id: id))
        case .import(let args): .response(try await ImportResponder(session: services).handle(args, id: id))
        case .logout(let args): .response(try await LogoutResponder(session: services).handle(args, id: id))
        case .watch(let args): try await WatchResponder(status: services, hub: hub, gate: gate).handle(args, id: id)
        case .login(let args): LoginResponder(signIn: services).handle(args, id: id)
        case .account(let args): try await AccountResponder(management: services, signIn: services).handle(args, id: id)
        case .reload: .response(try await ReloadResponder(configuration: configuration).handle(id: id))
        case .store(let args): .response(try await StoreResponder(stores: services, status: services).handle(args, id: id))
        }
    }
}
