import ArgumentParser
import TokendCore
import TokendProtocol

extension Tokenctl {
    /// `tokenctl logout ACCOUNT`: the daemon forgets the session, keyring included.
    struct Logout: TokenctlCommand {
        static let configuration = CommandConfiguration(
            abstract: "Forget an account's tokens, keyring item included.")

        @Argument(help: "The account, as named in config.toml.")
        var account: String

        @OptionGroup var connection: ConnectionOptions

        func validate() throws { try validateAccount(account) }

        func execute(_ context: CommandContext) throws(TokenctlError) {
            let daemon = try DaemonConnection(options: connection, context: context)
            _ = try daemon.call(Request(op: Op.logout.rawValue, account: account))
            try context.console.write("\(Text.singleLine(account)) logged out\n")
        }
    }
}
