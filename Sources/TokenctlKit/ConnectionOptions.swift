import ArgumentParser
import TokendCore
import TokendProtocol
#if canImport(Glibc)
import Glibc
#endif

/// The options every subcommand takes: where the daemon is and how long to wait for it.
struct ConnectionOptions: ParsableArguments {
    /// 30 s: long enough for a refresh over a slow network and the daemon's own retries, short
    /// enough that a script stuck on a dead provider notices within a minute.
    static let defaultTimeout = 30.0

    @Option(help: ArgumentHelp(
        "The daemon's socket (default: $TOKEND_SOCKET, else $XDG_RUNTIME_DIR/tokend/tokend.sock).",
        valueName: "path"))
    var socket: String?

    // Optional with the default in the help text: ArgumentParser would show "30.0".
    @Option(
        name: .customLong("timeout"),
        help: ArgumentHelp("Seconds to wait for the daemon, including a refresh it has to make first (default: 30; for login and account upgrade, the time the sign-in may take: 300).", valueName: "seconds"))
    var timeoutOption: Double?

    var timeout: Double { timeoutOption ?? Self.defaultTimeout }

    func validate() throws {
        try ConnectionSettings.validate(timeout: timeout)
    }

    var settings: ConnectionSettings { ConnectionSettings(socket: socket, timeout: timeout) }
}

/// What `ConnectionOptions` says, as plain values: the `token` fast path builds it without
/// ArgumentParser's property wrappers, whose first use costs ~0.3 M instructions of metadata.
struct ConnectionSettings {
    var socket: String?
    var timeout: Double

    static func validate(timeout: Double) throws {
        guard timeout.isFinite, timeout > 0 else { throw ValidationError("--timeout must be a positive number of seconds") }
    }

    /// Time for the daemon to say it ran out of time: its `unavailable` must reach us before we
    /// give up and call it unreachable. 2 s covers a busy daemon on a loaded machine.
    static let answerMargin = 2.0

    /// The socket read deadline: the request's own `timeout` plus the margin.
    var readTimeout: Double { timeout + Self.answerMargin }
}

/// The context a subcommand runs in: its console, the environment and the clock.
struct CommandContext {
    var console: any Console
    var environment: Environment
    var now: () -> Date = { Date() }
    /// SIGPIPE's disposition before tokenctl ignored it, for `exec` to hand on unchanged.
    var inheritedPipeHandler: __sighandler_t? = SIG_DFL
}

/// One request/response exchange with the daemon, failures mapped to `TokenctlError`.
struct DaemonConnection {
    let client: BlockingClient
    let path: String
    let settings: ConnectionSettings
    let environment: Environment

    /// The request id tokenctl sends; one request per connection, so any fixed value will do.
    static let requestID = RequestID.number(Double(plainRequestID))  // conversion: a small constant
    /// The same as a plain number, for the line `Tokenctl.runPlainToken` writes.
    static let plainRequestID = 1

    init(options: ConnectionOptions, context: CommandContext) throws(TokenctlError) {
        try self.init(settings: options.settings, context: context)
    }

    init(settings: ConnectionSettings, context: CommandContext) throws(TokenctlError) {
        do {
            path = try SocketPath.resolve(explicit: settings.socket, environment: context.environment)
        } catch {
            let named = [settings.socket, context.environment[SocketPath.environmentVariable], context.environment["XDG_RUNTIME_DIR"]]
            guard named.contains(where: { !($0 ?? "").isEmpty }) else {
                // Typical of cron jobs and `sudo -u`: no login session, so no runtime directory.
                throw TokenctlError(
                    .usage, "cannot tell where tokend's socket is: XDG_RUNTIME_DIR is not set",
                    next: "pass --socket PATH or set TOKEND_SOCKET")
            }
            throw TokenctlError(.usage, error.description, next: "use a shorter socket path (--socket or TOKEND_SOCKET)")
        }
        client = try StartingDaemon.connect(path: path, settings: settings)
        self.settings = settings
        environment = context.environment
    }

    /// Sends `command` under tokenctl's id. Each line of the answer may take `readTimeout`
    /// seconds (0: forever, for a watch); `timeout` is the wait an error message names.
    func send(_ command: Command, readTimeout: Double, timeout: Double) throws(TokenctlError) {
        try send(line: command.line(id: Self.requestID), readTimeout: readTimeout, timeout: timeout)
    }

    /// Sends a request line as it is: `command.line(id:)`, or the plain `token` path's own bytes.
    func send(line: [UInt8], readTimeout: Double, timeout: Double) throws(TokenctlError) {
        client.setReadTimeout(seconds: readTimeout)
        do {
            try client.send(line: line)
        } catch {
            throw TokenctlError(client: error, path: path, timeout: timeout)
        }
    }

    /// The daemon's next line. `closed`, when given, is the error for a daemon that ends the
    /// connection instead (a stream that ends); otherwise that is a connection failure.
    func receiveLine(timeout: Double, closed: TokenctlError? = nil) throws(TokenctlError) -> [UInt8] {
        do {
            return try client.receiveLine()
        } catch {
            if error.code == .closed, let closed { throw closed }
            throw TokenctlError(client: error, path: path, timeout: timeout)
        }
    }

    /// The answer to `command`, successful or not, and the raw line it came in. A command that
    /// waits on the daemon carries `settings.timeout` (the `timeout` property of its arguments).
    func exchange(_ command: Command) throws(TokenctlError) -> (response: Response, line: [UInt8]) {
        try send(command, readTimeout: settings.readTimeout, timeout: settings.timeout)
        let line = try receiveLine(timeout: settings.timeout)
        return (try Self.response(line), line)
    }

    /// The answer a line of the daemon carries, under tokenctl's id.
    static func response(_ line: [UInt8]) throws(TokenctlError) -> Response {
        let response: Response
        if let token = TokenExchangeCoding.reply(line) {
            response = token
        } else {
            do {
                response = try JSONDecoder().decode(Response.self, from: Data(line))
            } catch {
                throw .protocolMismatch("a line this tokenctl cannot read")
            }
        }
        if let id = response.id, id != Self.requestID {
            throw .protocolMismatch("the answer to another request")
        }
        return response
    }

    /// A successful answer to `command`, and the raw line it came in (for `status --json`).
    /// A daemon error becomes the matching `TokenctlError`.
    func call(_ command: Command) throws(TokenctlError) -> (response: Response, line: [UInt8]) {
        let (response, line) = try exchange(command)
        try Self.check(response, account: command.account, environment: environment)
        return (response, line)
    }

    /// Every configured account as `list` shows it, claims included: what the credential helpers
    /// (git's, the container tools') match a host against. A connection of its own, as tokenctl
    /// makes one request per connection.
    static func accounts(_ settings: ConnectionSettings, _ context: CommandContext) throws(TokenctlError) -> [AccountStatus] {
        try DaemonConnection(settings: settings, context: context).call(.list(StatusArgs())).response.accounts ?? []
    }

    /// `account`'s token with the daemon's defaults (kind, how long it must stay valid), on a connection of its own.
    static func token(of account: String, _ settings: ConnectionSettings, _ context: CommandContext) throws(TokenctlError) -> TokenGrant {
        let command = Command.token(TokenArgs(account: account, timeout: settings.timeout))
        return try TokenGrant(DaemonConnection(settings: settings, context: context).call(command).response)
    }

    static func check(_ response: Response, account: String?, environment: Environment) throws(TokenctlError) {
        guard !response.ok else { return }
        guard let error = response.error else { throw .protocolMismatch("a failure without an error") }
        throw TokenctlError(daemon: error, account: account, environment: environment)
    }
}
