import ArgumentParser
import CTokendShims
import TokendCore
import TokendProtocol

extension Tokenctl {
    /// `tokenctl token ACCOUNT`: the one command scripts call in loops, so it does one connect,
    /// one write, one read, and prints the token and a newline — nothing else — on stdout.
    struct Token: TokenctlCommand, FastParsedCommand {
        static let fastName = "token"
        static let configuration = CommandConfiguration(
            commandName: fastName,
            abstract: "Print a current token of an account on stdout, and nothing else.",
            discussion: "Example: curl -H \"Authorization: Bearer $(tokenctl token work)\" …")

        @OptionGroup var token: TokenOptions

        func execute(_ context: CommandContext) throws(TokenctlError) {
            // The token passes through this process: no core dump or same-user ptrace may lift it.
            _ = tokend_set_not_dumpable()
            try context.console.write(try token.fetch(context).token + "\n")
        }
    }

    /// `--kind` values; a type of our own so ArgumentParser can list them in the help.
    enum KindArgument: String, ExpressibleByArgument, CaseIterable {
        case id, access

        var tokenKind: TokenKind {
            switch self {
            case .id: .id
            case .access: .access
            }
        }
    }
}
