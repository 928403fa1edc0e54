import ArgumentParser
import CTokendShims
import TokendCore
import TokendProtocol

extension Tokenctl {
    /// `tokenctl token ACCOUNT`: the one command scripts call in loops, so it does one connect,
    /// one write, one read, and prints the token and a newline — nothing else — on stdout.
    struct Token: TokenctlCommand, FastParsedCommand {
        static let fastName = "token"
        /// Every environment variable the fast path reads (the socket, and the config path that
        /// error messages name); main.swift reads only these for it. Keep it complete.
        static let variables = [SocketPath.environmentVariable, "XDG_RUNTIME_DIR", "TOKEND_CONFIG", "XDG_CONFIG_HOME"]
        static let configuration = CommandConfiguration(
            commandName: fastName,
            abstract: "Print a current token of an account on stdout, and nothing else.",
            discussion: "Example: curl -H \"Authorization: Bearer $(tokenctl token work)\" …")

        @OptionGroup var token: TokenOptions

        func execute(_ context: CommandContext) throws(TokenctlError) {
            try Self.printToken(of: FastArguments(token), context)
        }

        /// What `execute` does, from plain values: `Tokenctl.run` calls it directly for the plain
        /// forms, so a shell loop's call never builds ArgumentParser's types or casts to find the
        /// command (0.3 M and 0.3 M instructions of runtime metadata, callgrind).
        static func printToken(of arguments: FastArguments, _ context: CommandContext) throws(TokenctlError) {
            // The token passes through this process: no core dump or same-user ptrace may lift it.
            _ = tokend_set_not_dumpable()
            try context.console.write(try TokenOptions.fetch(arguments, context).token + "\n")
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
