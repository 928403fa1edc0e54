import ArgumentParser
import TokendCore
import TokendProtocol

extension Tokenctl {
    /// `tokenctl list`: one account per line, `NAME<TAB>PROVIDER<TAB>STATE`, for `cut` and `while read`.
    struct List: TokenctlCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the configured accounts: NAME<TAB>PROVIDER<TAB>STATE, one per line.")

        @OptionGroup var connection: ConnectionOptions

        func execute(_ context: CommandContext) throws(TokenctlError) {
            let daemon = try DaemonConnection(options: connection, context: context)
            let (response, _) = try daemon.call(.list(StatusArgs()))
            guard let accounts = response.accounts else { throw .protocolMismatch("a list reply without accounts") }
            try context.console.write(Self.render(accounts))
        }

        static func render(_ accounts: [AccountStatus]) -> String {
            accounts.map { "\(Text.singleLine($0.name))\t\(Text.singleLine($0.provider))\t\(Text.singleLine($0.state))\n" }
                .joined()
        }
    }
}
