import ArgumentParser
import CTokendShims
import TokendCore
import TokendProtocol

extension Tokenctl {
    /// `tokenctl header ACCOUNT`: the HTTP header line, for `curl -H "$(tokenctl header work)"`
    /// and `curl -H @<(tokenctl header work)` (the token stays out of curl's argv).
    struct Header: TokenctlCommand, FastParsedCommand {
        static let fastName = "header"
        static let configuration = CommandConfiguration(
            commandName: fastName,
            abstract: "Print \"Authorization: Bearer TOKEN\" for an account, for curl -H.",
            discussion: "Example: curl -H @<(tokenctl header work) https://api.example.com/ (keeps the token out of curl's argv)")

        @OptionGroup var token: TokenOptions

        func execute(_ context: CommandContext) throws(TokenctlError) {
            _ = tokend_set_not_dumpable()
            try context.console.write("Authorization: Bearer \(try token.fetch(context).token)\n")
        }
    }
}
