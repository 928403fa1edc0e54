import ArgumentParser
import TokendCore
import TokendProtocol
#if canImport(Glibc)
import Glibc
#endif

extension Tokenctl {
    /// `tokenctl watch [ACCOUNT]`: the daemon's event stream, one JSON object per line, passed
    /// through as it arrives (`tokenctl watch | jq` for humans, `while read` for scripts).
    struct Watch: TokenctlCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print tokend's events (refreshed, needs_login, …) as JSON lines until interrupted.",
            discussion: """
                Runs until Ctrl-C (exit status 0), until stdout's reader goes away (0), or until \
                tokend closes the connection (69). --timeout bounds only the connect; events may \
                be hours apart.
                """)

        @Argument(help: "Only this account's events.")
        var account: String?

        @OptionGroup var connection: ConnectionOptions

        func validate() throws {
            if let account { try validateAccount(account) }
        }

        func execute(_ context: CommandContext) throws(TokenctlError) {
            let daemon = try DaemonConnection(options: connection, context: context)
            let client = daemon.client
            // Ctrl-C is how a watch normally ends. Every event was written with write(2), so
            // nothing is lost by leaving at once; BlockingClient retries reads interrupted by a
            // signal, so a flag would never be seen while it waits for the next event.
            signal(SIGINT) { _ in _exit(0) }
            defer { signal(SIGINT, SIG_DFL) }
            do {
                client.setReadTimeout(seconds: 0)
                try client.send(Request(op: Op.watch.rawValue, id: DaemonConnection.requestID, account: account))
            } catch {
                throw TokenctlError(client: error, path: daemon.path, timeout: connection.timeout)
            }
            while true {
                let line: [UInt8]
                do {
                    line = try client.receiveLine()
                } catch where error.code == .closed {
                    throw TokenctlError(
                        .notReachable, "tokend at \(daemon.path) ended the watch",
                        next: "check that it runs (systemctl --user status tokend), then watch again")
                } catch {
                    throw TokenctlError(client: error, path: daemon.path, timeout: connection.timeout)
                }
                // Replies carry "ok" and events do not: the acknowledgement is not an event, and
                // an error (unknown_account, …) ends the watch like any other command.
                if let reply = try? JSONDecoder().decode(Response.self, from: Data(line)) {
                    try DaemonConnection.check(reply, account: account, environment: context.environment)
                    continue
                }
                do {
                    try context.console.write(String(decoding: line, as: UTF8.self) + "\n")
                } catch where error.code == .outputClosed {
                    return  // `tokenctl watch | head -n 3`: the reader has what it wanted.
                }
            }
        }
    }
}
