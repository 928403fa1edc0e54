import CTokendShims
import TokendCore
import TokendProtocol
import TokendSystem
#if canImport(Glibc)
import Glibc
#endif

extension Tokenctl {
    /// `tokenctl token ACCOUNT` and nothing else, read straight from argv: the call shell loops
    /// make over and over, in about a millisecond of which exec and the C runtime take most. The
    /// general path first builds `CommandLine.arguments` and parses them twice, and each generic
    /// type it touches (string arrays, `RequestFields`' entries, optionals of its structs) is
    /// metadata the runtime instantiates from its mangled name: ~10 % and ~7 % of the process
    /// (perf, issue 47). This does what `Token.printToken` does for that form, with the same
    /// connection, reply decoding, checks and messages; nil for any other command line, before
    /// anything is done, and `runAsProcess` serves it.
    public static func runPlainToken(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> Int32? {
        guard let account = plainTokenAccount(argc, argv) else { return nil }
        return runPlainToken(account, environment: Environment.process(only: Token.variables), console: SystemConsole())
    }

    /// The account of `tokenctl token ACCOUNT`, `FastArguments`' plain form: the word, and an
    /// account that is not empty and does not start with "-" (ArgumentParser's to diagnose);
    /// nil for anything else. Invalid UTF-8 is `CommandLine`'s to repair.
    static func plainTokenAccount(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> String? {
        guard argc == 3, let word = argv[1], let name = argv[2], strcmp(word, Token.fastName) == 0,
            name.pointee != 0, UInt8(bitPattern: name.pointee) != UInt8(ascii: "-")
        else { return nil }
        return String(validatingCString: name)
    }

    /// `run` for `token ACCOUNT`: the status, the token or the one line on stderr.
    static func runPlainToken(_ account: String, environment: Environment, console: any Console) -> Int32 {
        let inheritedPipeHandler = signal(SIGPIPE, SIG_IGN)  // as `run` does: EPIPE is exit 69
        do {
            try printPlainToken(of: account, CommandContext(console: console, environment: environment, inheritedPipeHandler: inheritedPipeHandler))
            return 0
        } catch {
            return report(error, console: console)
        }
    }

    /// `TokenOptions.fetch` and `Token.printToken` for a plain `token ACCOUNT`: default socket
    /// and timeout, the request line `TokenExchangeCoding.plainTokenLine` writes.
    static func printPlainToken(of account: String, _ context: CommandContext) throws(TokenctlError) {
        // The token passes through this process: no core dump or same-user ptrace may lift it.
        _ = tokend_set_not_dumpable()
        let settings = ConnectionSettings(socket: nil, timeout: ConnectionOptions.defaultTimeout)
        let daemon = try DaemonConnection(settings: settings, context: context)
        let line = TokenExchangeCoding.plainTokenLine(
            account: account, id: DaemonConnection.plainRequestID, timeout: Int(ConnectionOptions.defaultTimeout))  // conversion: a whole constant, 30
        try daemon.send(line: line, readTimeout: settings.readTimeout, timeout: settings.timeout)
        let response = try DaemonConnection.response(daemon.receiveLine(timeout: settings.timeout))
        try DaemonConnection.check(response, account: account, environment: context.environment)
        try context.console.write(TokenGrant(response).token + "\n")
    }
}
