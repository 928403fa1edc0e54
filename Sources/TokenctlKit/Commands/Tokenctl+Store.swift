import ArgumentParser
import TokendCore
import TokendProtocol

extension Tokenctl {
    /// `tokenctl store move ACCOUNT... --to STORE` (README, "Stores"): where sessions are kept.
    struct Store: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Move sessions between stores (secret-service, tpm2, pass), nothing lost on the way.",
            subcommands: [Move.self])

        struct Move: TokenctlCommand {
            static let configuration = CommandConfiguration(
                abstract: "Move accounts' sessions to another store.",
                discussion: """
                    The session is written to the new store and read back before tokend records the \
                    move (in $XDG_STATE_HOME/tokend/stores.json) and removes the old copy, so a crash \
                    at any point leaves it readable where tokend looks at its next start. A moved \
                    account stays in its new store whatever the configuration's `store` says, until \
                    it is moved again; `tokenctl status` says so.
                    """)

            @Argument(help: "The accounts to move, as named in config.toml.", completion: .custom(AccountCompletion.names))
            var accounts: [String] = []

            @Flag(help: "Move every configured account.")
            var all = false

            @Option(help: ArgumentHelp("The store to move to: \(StoreKind.allCases.map(\.rawValue).joined(separator: ", ")).", valueName: "store"),
                    completion: .list(StoreKind.allCases.map(\.rawValue)))
            var to: String

            @OptionGroup var connection: ConnectionOptions

            func validate() throws {
                guard StoreKind(rawValue: to) != nil else {
                    throw ValidationError("--to must name a store: \(StoreKind.allCases.map(\.rawValue).joined(separator: ", "))")
                }
                if all, !accounts.isEmpty { throw ValidationError("name accounts or pass --all, not both") }
                if !all, accounts.isEmpty { throw ValidationError("name the accounts to move, or pass --all") }
                for account in accounts { try validateAccount(account) }
            }

            /// One line per account on stdout; a failure is one line on stderr, and the others are
            /// still moved (each account's move stands alone). The exit status is the last failure's.
            func execute(_ context: CommandContext) throws(TokenctlError) {
                let target = StoreKind(rawValue: to) ?? .secretService  // checked by validate()
                var names = accounts
                if all { names = try DaemonConnection.accounts(connection.settings, context).map(\.name) }
                if names.isEmpty { return try context.console.write("No accounts are configured.\n") }
                var failures: [TokenctlError] = []
                for name in names {
                    do {
                        try move(name, to: target, context)
                    } catch {
                        failures.append(error)
                    }
                }
                // Each failure is one line; the last is reported (and decides the status) by run().
                for failure in failures.dropLast() { context.console.writeError(failure.line + "\n") }
                if let last = failures.last { throw last }
            }

            private func move(_ name: String, to target: StoreKind, _ context: CommandContext) throws(TokenctlError) {
                let daemon = try DaemonConnection(options: connection, context: context)
                let response = try daemon.call(.store(StoreArgs(move: name, to: target))).response
                let state = response.accounts?.first.map { " (\($0.state))" } ?? ""
                if response.warning == "already in \(target.rawValue)" {
                    return try context.console.write("\(Text.singleLine(name)): already in \(target.rawValue)\(state)\n")
                }
                try context.console.write("\(Text.singleLine(name)): moved to \(target.rawValue)\(state)\n")
                if let warning = response.warning {
                    context.console.writeError("tokenctl: warning: \(Text.singleLine(name)): \(Text.singleLine(warning))\n")
                }
            }
        }
    }
}
