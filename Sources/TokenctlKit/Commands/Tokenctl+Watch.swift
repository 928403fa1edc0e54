import ArgumentParser
import TokendCore
import TokendProtocol
#if canImport(Glibc)
import Glibc
#endif

extension Tokenctl {
    /// `tokenctl watch [ACCOUNT]`: the daemon's event stream as it arrives — readable lines on a
    /// terminal, the daemon's JSON lines passed through with `--json` or into a pipe.
    struct Watch: TokenctlCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print tokend's events (refreshed, needs_login, keyring_locked, …) until interrupted.",
            discussion: """
                On a terminal one readable line per event; with --json, or when stdout is not a \
                terminal, the JSON line tokend sent. Events never carry a token. Runs until Ctrl-C (exit status 0), until stdout's reader goes away (0), or until \
                tokend closes the connection (69). --timeout bounds only the connect; events may \
                be hours apart.
                """)

        @OptionGroup var filter: AccountFilter
        @Flag(help: "JSON lines even on a terminal.")
        var json = false
        @OptionGroup var connection: ConnectionOptions

        var account: String? { filter.account }

        func execute(_ context: CommandContext) throws(TokenctlError) {
            let daemon = try DaemonConnection(options: connection, context: context)
            // Ctrl-C is how a watch normally ends. Every event was written with write(2), so
            // nothing is lost by leaving at once; BlockingClient retries reads interrupted by a
            // signal, so a flag would never be seen while it waits for the next event.
            signal(SIGINT) { _ in _exit(0) }
            defer { signal(SIGINT, SIG_DFL) }
            // No read timeout: events may be hours apart.
            try daemon.send(.watch(WatchArgs(account: account)), readTimeout: 0, timeout: connection.timeout)
            let ended = TokenctlError(
                .notReachable, "tokend at \(daemon.path) ended the watch",
                next: "check that it runs (systemctl --user status tokend), then watch again")
            let readable = !json && context.console.outputIsTerminal
            while true {
                let line = try daemon.receiveLine(timeout: connection.timeout, closed: ended)
                // Replies carry "ok" and events do not: the acknowledgement is not an event, and
                // an error (unknown_account, …) ends the watch like any other command.
                if let reply = try? JSONDecoder().decode(Response.self, from: Data(line)) {
                    try DaemonConnection.check(reply, account: account, environment: context.environment)
                    continue
                }
                do {
                    let text = readable ? WatchLine.render(line) : String(decoding: line, as: UTF8.self)
                    try context.console.write(text + "\n")
                } catch where error.code == .outputClosed {
                    return  // `tokenctl watch | head -n 3`: the reader has what it wanted.
                }
            }
        }
    }
}

/// An event as one readable line: `2026-05-01T09:14:02Z  work  refreshed  expires 2026-05-01T10:14:02Z`.
enum WatchLine {
    private struct Fields: Decodable {
        struct Failure: Decodable {
            var code: String
            var message: String?
        }
        var event: String
        var account: String?
        var at: String?
        var expiresAt: String?
        var retryAt: String?
        var error: Failure?
        var signInProvider: String?
        var reason: String?

        enum CodingKeys: String, CodingKey {
            case event, account, at, error, reason
            case expiresAt = "expires_at"
            case retryAt = "retry_at"
            case signInProvider = "sign_in_provider"
        }
    }

    /// The line for one event; a line this tokenctl cannot read is shown as it came.
    static func render(_ line: [UInt8]) -> String {
        guard let fields = try? JSONDecoder().decode(Fields.self, from: Data(line)) else {
            return Text.singleLine(String(decoding: line, as: UTF8.self))
        }
        var parts = [fields.at ?? "-", fields.account ?? "-", fields.event]
        if let provider = fields.signInProvider { parts.append("with \(provider)") }
        if let reason = fields.reason { parts.append(reason) }
        if let expiry = fields.expiresAt { parts.append("expires \(expiry)") }
        if let error = fields.error { parts.append([error.code, error.message].compactMap { $0 }.joined(separator: ": ")) }
        if let retry = fields.retryAt { parts.append("retry at \(retry)") }
        return Text.singleLine(parts.joined(separator: "  "))
    }
}
