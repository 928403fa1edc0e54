import ArgumentParser
import CTokendShims
import TokendCore
import TokendProtocol
#if canImport(Glibc)
import Glibc
#endif

extension Tokenctl {
    /// `tokenctl exec ACCOUNT -- CMD…`: replaces itself with CMD (execvp), the token in its
    /// environment. No wrapper process stays behind, so CMD's exit status and signals reach the
    /// caller unchanged.
    struct Exec: TokenctlCommand, FastParsedCommand {
        static let fastName = "exec"
        static let configuration = CommandConfiguration(
            commandName: fastName,
            abstract: "Run a command with a current token in its environment.",
            discussion: """
                The command gets TOKEND_TOKEN, TOKEND_TOKEN_EXPIRES_AT (RFC 3339 UTC) and \
                TOKEND_ACCOUNT, and replaces tokenctl: its exit status and signals are its own. \
                A command that cannot be found exits 64, one that cannot be run exits 1. \
                Example: tokenctl exec work --min-valid 600 -- ./deploy.sh
                """)

        @OptionGroup var token: TokenOptions

        @Argument(parsing: .postTerminator, help: ArgumentHelp("The command and its arguments, after --.", valueName: "command"))
        var command: [String] = []

        mutating func takeTrailing(_ arguments: [String]?) -> Bool {
            guard let arguments else { return false }
            command = arguments
            return true
        }

        func validate() throws {
            guard let program = command.first, !program.isEmpty else {
                throw ValidationError("name the command to run after --: tokenctl exec ACCOUNT -- CMD…")
            }
        }

        func execute(_ context: CommandContext) throws(TokenctlError) {
            _ = tokend_set_not_dumpable()
            let grant = try token.fetch(context)
            setenv("TOKEND_TOKEN", grant.token, 1)
            if let expiresAt = grant.expiresAt { setenv("TOKEND_TOKEN_EXPIRES_AT", expiresAt, 1) }
            setenv("TOKEND_ACCOUNT", token.account, 1)
            // tokenctl ignores SIGPIPE for itself; an ignored signal stays ignored across
            // execve, and `CMD | head` relies on SIGPIPE ending CMD: hand on what we were given.
            signal(SIGPIPE, context.inheritedPipeHandler)
            let arguments = command.map { strdup($0) } + [nil]
            execvp(command[0], arguments)
            let failure = errno
            arguments.forEach { free($0) }
            signal(SIGPIPE, SIG_IGN)
            let reason = String(cString: strerror(failure))
            let name = Text.singleLine(command[0])
            if failure == ENOENT {
                throw TokenctlError(.usage, "cannot run \(name): \(reason)", next: "check the command's name and PATH")
            }
            throw TokenctlError(.failure, "cannot run \(name): \(reason)", next: "check that it is an executable program")
        }
    }
}
