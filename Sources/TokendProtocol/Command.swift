import TokendCore

// The protocol's ops as types, for both ends: tokenctl and the credential helpers build a
// `Command` and send its line; the daemon decodes each line once (`WireCoding.decodeRequest`)
// into its fields (`RequestFields`, the table `RequestField`) and checks them into a `Command`
// here. Each op's arguments type (TokenArgs.swift, LoginArgs.swift, …) reads, checks and writes
// its own fields in one file, and keeps what the wire carries (a field's absence where the daemon
// supplies a default), so a command encodes to the line it came from, field for field.

/// The ops of protocol version 1.
public enum Op: String, CaseIterable, Sendable {
    case hello, token, list, status, refresh, `import`, login, account, logout, watch
    /// Re-reads the configuration file and answers once it is applied or refused (`tokenctl
    /// reload`, the unit's `ExecReload=`): what SIGHUP does, with an answer to wait for.
    case reload
    /// Where an account's session is kept: `move` it to another store (`StoreArgs`).
    case store
}

/// An op's arguments: read from a request's fields and checked (every failure a `bad_request`
/// naming the op and the field), and written back into them for the line a client sends.
public protocol CommandArguments: Sendable, Equatable {
    init(_ request: FieldReader) throws(TokendError)
    func write(to fields: inout RequestFields)
}

/// A request, decoded and checked, or about to be sent: what an op's responder receives and
/// what tokenctl sends.
public enum Command: Sendable, Equatable {
    case hello
    case token(TokenArgs)
    /// `list` and `status` answer alike; both may name one account (docs/protocol.md).
    case list(StatusArgs)
    case status(StatusArgs)
    case refresh(RefreshArgs)
    case `import`(ImportArgs)
    case login(LoginArgs)
    case account(AccountArgs)
    case logout(LogoutArgs)
    case watch(WatchArgs)
    /// Re-read the configuration file; no arguments.
    case reload
    case store(StoreArgs)

    public var op: Op {
        switch self {
        case .hello: .hello
        case .token: .token
        case .list: .list
        case .status: .status
        case .refresh: .refresh
        case .import: .import
        case .login: .login
        case .account: .account
        case .logout: .logout
        case .watch: .watch
        case .reload: .reload
        case .store: .store
        }
    }

    /// The op's arguments; nil for an op that has none.
    public var arguments: (any CommandArguments)? {
        switch self {
        case .hello, .reload: nil
        case .token(let args): args
        case .list(let args), .status(let args): args
        case .refresh(let args): args
        case .import(let args): args
        case .login(let args): args
        case .account(let args): args
        case .logout(let args): args
        case .watch(let args): args
        case .store(let args): args
        }
    }

    /// The account the command names, if any.
    public var account: String? {
        switch self {
        case .hello, .reload: nil
        case .token(let args): args.account
        case .list(let args), .status(let args): args.account
        case .refresh(let args): args.account
        case .import(let args): args.account
        case .login(let args): args.account
        case .account(let args): args.account
        case .logout(let args): args.account
        case .watch(let args): args.account
        case .store(let args): args.account
        }
    }

    /// Checks `fields` for their op. An unknown op is `unsupported_op`; everything else that is
    /// wrong is `bad_request` naming the field.
    public init(_ fields: RequestFields) throws(TokendError) {
        let name = fields.string(.op) ?? ""
        guard let op = Op(rawValue: name) else {
            throw TokendError(.unsupportedOp, "unknown op \"\(name.prefix(64))\"; hello lists the supported ones")
        }
        let request = FieldReader(op: op, fields: fields)
        switch op {
        case .hello: self = .hello
        case .reload: self = .reload
        case .token: self = .token(try TokenArgs(request))
        case .list: self = .list(try StatusArgs(request))
        case .status: self = .status(try StatusArgs(request))
        case .refresh: self = .refresh(try RefreshArgs(request))
        case .import: self = .import(try ImportArgs(request))
        case .logout: self = .logout(try LogoutArgs(request))
        case .watch: self = .watch(try WatchArgs(request))
        case .login: self = .login(try LoginArgs(request))
        case .account: self = .account(try AccountArgs(request))
        case .store: self = .store(try StoreArgs(request))
        }
    }

    /// The request's fields for this command under `id`: what its line carries.
    public func fields(id: RequestID?) -> RequestFields {
        var fields = RequestFields()
        fields.set(.op, op.rawValue)
        fields.set(.id, id)
        arguments?.write(to: &fields)
        return fields
    }

    /// The line to send: a `token` command by hand (`TokenExchangeCoding`, tokenctl's shell
    /// path), any other through the encoder.
    public func line(id: RequestID?) -> [UInt8] {
        let fields = fields(id: id)
        if let line = TokenExchangeCoding.requestLine(fields) { return line }
        return WireCoding.encodeLine(fields)
    }

    /// Default wait for a refresh when a request names no `timeout`: long enough for a slow
    /// provider (HTTP deadline 10 s plus a keyring write), short enough for an interactive shell.
    public static let defaultTimeout: Double = 30
    /// Upper bound on a request's `timeout` (`RequestField.timeout`'s bound).
    public static let maximumTimeout: Double = RequestField.timeout.bound!.upperBound
}

extension Command: CustomStringConvertible {
    /// `import` carries tokens and `login` passwords: describe a command by its op alone.
    public var description: String { "Command(\(op.rawValue))" }
}

/// A line as the daemon read it, once: its `id` (when it could be read) and the command, or the
/// `bad_request` / `unsupported_op` that says what is wrong with it.
public struct DecodedRequest: Sendable {
    public var id: RequestID?
    public var command: Result<Command, TokendError>

    public init(id: RequestID?, command: Result<Command, TokendError>) {
        self.id = id
        self.command = command
    }

    /// A command as if its line had been read.
    public init(_ command: Command, id: RequestID? = nil) {
        self.init(id: id, command: .success(command))
    }

    /// Checks decoded fields into their command.
    public init(_ fields: RequestFields) {
        self.init(id: fields.id, command: Result { () throws(TokendError) in try Command(fields) })
    }
}
