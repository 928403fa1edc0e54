import ArgumentParser
import TokendCore
import TokendProtocol
import TokendSystem
#if canImport(Glibc)
import Glibc
#endif

/// The `tokenctl` command: the daemon's client for shells and scripts.
public struct Tokenctl: ParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "tokenctl",
        abstract: "Get current tokens from tokend, and manage its accounts.",
        discussion: """
            Exit status: 0 ok, 64 usage error, 67 unknown account, 69 tokend not reachable, \
            75 temporary failure (try again later), 77 the account needs a new login, \
            78 configuration error, 1 anything else. Failures print one line on stderr that \
            says what to do next; only `token` prints a token, and only on stdout.
            """,
        version: tokendVersion,
        subcommands: [
            Token.self, Status.self, List.self, Refresh.self, Login.self, Account.self, Import.self, Logout.self, Watch.self, Reload.self, Store.self, Audit.self,
            Exec.self, Header.self, ExecCredential.self, GitCredential.self,
        ])

    public init() {}

    /// The executable's entry: `arguments` without the program name; returns the exit status.
    public static func runAsProcess(_ arguments: [String]) -> Int32 {
        // The plain `token` form (the one `run` serves without ArgumentParser) reads few variables.
        let plainToken = FastArguments(arguments, name: Token.fastName).map { $0.trailing == nil } ?? false
        let environment = Environment.process(only: plainToken ? Token.variables : nil)
        return run(arguments, environment: environment, console: SystemConsole())
    }

    /// Parses `arguments` (without the program name), runs the command and returns the exit
    /// status. Nothing below calls exit(): every failure arrives here as a `TokenctlError`.
    static func run(_ arguments: [String], environment: Environment, console: any Console) -> Int32 {
        // A daemon hanging up mid-write must surface as EPIPE (exit 69), not kill us silently;
        // the same holds for stdout, which `watch` treats as its reader going away.
        let inheritedPipeHandler = signal(SIGPIPE, SIG_IGN)
        if let fast = FastArguments(arguments, name: Token.fastName), fast.trailing == nil {
            do {
                try Token.printToken(of: fast, CommandContext(console: console, environment: environment, inheritedPipeHandler: inheritedPipeHandler))
                return 0
            } catch {
                return report(error, console: console)
            }
        }
        let parsed: any ParsableCommand
        do {
            parsed = try Token.parseFast(arguments) ?? Header.parseFast(arguments) ?? Exec.parseFast(arguments) ?? parseAsRoot(arguments)
        } catch {
            return reportParseError(error, arguments: arguments, console: console)
        }
        guard let command = parsed as? any TokenctlCommand else {
            // ArgumentParser's own commands (`help`, `--help`) and `tokenctl` alone: their run()
            // throws the CleanExit that carries the right help screen.
            do {
                var builtin = parsed
                try builtin.run()
                return 0
            } catch {
                return reportParseError(error, arguments: arguments, console: console)
            }
        }
        do {
            try command.execute(CommandContext(console: console, environment: environment, inheritedPipeHandler: inheritedPipeHandler))
            return 0
        } catch {
            return report(error, console: console)
        }
    }

    static func report(_ error: TokenctlError, console: any Console) -> Int32 {
        console.writeError(error.line + "\n")
        return error.code.exitCode
    }

    /// `--help` goes to stdout with status 0; a usage error becomes the one stderr line.
    private static func reportParseError(_ error: any Error, arguments: [String], console: any Console) -> Int32 {
        if exitCode(for: error) == .success {
            let text = fullMessage(for: error, columns: console.outputColumns)
            try? console.write(text.hasSuffix("\n") ? text : text + "\n")
            return 0
        }
        let subcommand = arguments.first { name in configuration.subcommands.contains { $0._commandName == name } }
        let help = ["tokenctl", subcommand, "--help"].compactMap { $0 }.joined(separator: " ")
        var said = message(for: error)
        if said.hasSuffix(".") { said.removeLast() }
        let failure = TokenctlError(.usage, said.isEmpty ? "invalid arguments" : said, next: "see: \(help)")
        console.writeError(failure.line + "\n")
        return failure.code.exitCode
    }
}

/// A subcommand: parsed by ArgumentParser, run by `Tokenctl.run` with an injected console.
protocol TokenctlCommand: ParsableCommand {
    func execute(_ context: CommandContext) throws(TokenctlError)
}

/// An account name as every subcommand takes it.
func validateAccount(_ account: String) throws {
    guard !account.isEmpty else { throw ValidationError("the account name must not be empty") }
}
