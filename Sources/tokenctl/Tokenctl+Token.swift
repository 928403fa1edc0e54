import ArgumentParser
import CTokendShims
import TokendCore
import TokendProtocol

extension Tokenctl {
    /// `tokenctl token ACCOUNT`: the one command scripts call in loops, so it does one connect,
    /// one write, one read, and prints the token and a newline — nothing else — on stdout.
    struct Token: TokenctlCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print a current token of an account on stdout, and nothing else.",
            discussion: "Example: curl -H \"Authorization: Bearer $(tokenctl token work)\" …")

        @Argument(help: "The account, as named in config.toml.")
        var account: String

        @Option(help: ArgumentHelp(
            "Seconds the token must stay valid; tokend refreshes first when it has less (tokend's default: 60).",
            valueName: "seconds"))
        var minValid: Double?

        @Option(help: "Which token: the ID token or the access token (default: id for Firebase, access for OIDC).")
        var kind: KindArgument?

        @OptionGroup var connection: ConnectionOptions

        func validate() throws {
            try validateAccount(account)
            if let minValid, !(minValid.isFinite && minValid >= 0) {
                throw ValidationError("--min-valid must be zero or a positive number of seconds")
            }
        }

        func execute(_ context: CommandContext) throws(TokenctlError) {
            // The token passes through this process: no core dump or same-user ptrace may lift it.
            _ = tokend_set_not_dumpable()
            let daemon = try DaemonConnection(options: connection, context: context)
            let (response, _) = try daemon.call(
                Request(op: Op.token.rawValue, account: account, minValid: minValid, kind: kind?.tokenKind))
            guard let token = response.token, !token.isEmpty else { throw .protocolMismatch("a reply without a token") }
            // `$(tokenctl token …)` must yield exactly one word; never print something else as a token.
            guard !token.utf8.contains(where: { $0 <= 0x20 || $0 == 0x7F }) else {
                throw .protocolMismatch("a token containing whitespace or control characters")
            }
            try context.console.write(token + "\n")
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
