import ArgumentParser
import TokendCore
import TokendProtocol

extension Tokenctl {
    /// `tokenctl reload`: the daemon re-reads its configuration file, and this returns once the
    /// result is applied: what the unit's `ExecReload=` runs, so that `systemctl --user reload
    /// tokend` waits for it too and fails when the file is broken.
    struct Reload: TokenctlCommand {
        static let configuration = CommandConfiguration(
            abstract: "Make tokend re-read its configuration file, and wait until it is applied.",
            discussion: """
                Exits 0 once the new configuration serves: a request made after it meets it. A \
                file that does not load exits 78 with its file, line and key; tokend keeps \
                serving the configuration it had. systemctl --user reload tokend runs this.
                """)

        @OptionGroup var connection: ConnectionOptions

        func execute(_ context: CommandContext) throws(TokenctlError) {
            let daemon = try DaemonConnection(options: connection, context: context)
            let (response, _) = try daemon.exchange(.reload)
            if !response.ok, let error = response.error, error.code == .configError {
                // The daemon's message is the located problem (file:line: key: what); the old
                // configuration still serves, which is worth saying to whoever edited the file.
                throw TokenctlError(
                    .configuration, "\(Text.singleLine(error.message)) (tokend keeps serving its last good configuration)",
                    next: "fix the file, then: tokenctl reload")
            }
            try DaemonConnection.check(response, account: nil, environment: context.environment)
            let accounts = response.configured ?? []
            let names = accounts.isEmpty ? "no accounts" : "\(accounts.count) account\(accounts.count == 1 ? "" : "s") (\(accounts.map(Text.singleLine).joined(separator: ", ")))"
            try context.console.write("tokend reloaded \(Text.singleLine(response.config ?? "its configuration")): \(names)\n")
        }
    }
}
