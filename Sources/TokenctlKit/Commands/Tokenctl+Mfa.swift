import ArgumentParser
import CTokendShims
import TokendCore
import TokendProtocol
import TokendSystem
#if canImport(Glibc)
import Glibc
#endif

extension Tokenctl.Account {
    /// `tokenctl account mfa VERB ACCOUNT`: the user's second factors (TOTP). The daemon holds
    /// the session; enrollment's pending state stays in it behind a single-use handle.
    struct Mfa: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List, enroll or remove the Firebase user's second factors (TOTP).",
            subcommands: [Enroll.self, List.self, Remove.self])

        struct Enroll: TokenctlCommand {
            static let configuration = CommandConfiguration(
                abstract: "Enroll a TOTP second factor for the user.",
                discussion: """
                    Prints the otpauth:// URI (and a QR code when stdout is a terminal and qrencode is \
                    installed) to add to an authenticator app, then reads the code the app shows: a \
                    prompt on a terminal, else the first line of stdin. The session is renewed (same \
                    user). Firebase enrolls only users with a verified email address who signed in \
                    with a password or an identity provider (not a custom token, not anonymously) \
                    within about 5 minutes, and only once an administrator has enabled TOTP for the \
                    project (Admin SDK or REST API; the console has no switch for it).
                    """)

            @Argument(help: "The account, as named in config.toml.", completion: .custom(AccountCompletion.names))
            var account: String

            @Flag(help: "A TOTP factor (an authenticator app); the only kind a command-line client can enroll.")
            var totp = false

            @Option(help: ArgumentHelp(
                "How Firebase lists the factor (1 to \(SecondFactor.maximumDisplayNameLength) characters).",
                discussion: "Default: \"tokend on HOST\", HOST being the daemon's host name.", valueName: "name"))
            var name: String?

            @OptionGroup var connection: ConnectionOptions

            func validate() throws {
                try validateAccount(account)
                guard totp else { throw ValidationError("say which factor: --totp (SMS needs reCAPTCHA, which a command-line client cannot give)") }
                if let name, let problem = SecondFactor.displayNameProblem(name) { throw ValidationError("--name \(problem)") }
            }

            func execute(_ context: CommandContext) throws(TokenctlError) {
                _ = tokend_set_not_dumpable()
                let started = try Tokenctl.Account.call(
                    .startSecondFactorEnrollment(timeout: connection.timeout), account: account, verb: "mfa enroll", connection: connection, context: context)
                guard let enrollment = started.enrollment else { throw .protocolMismatch("an enrollment reply without the secret") }
                // The URI alone on its line, for scripts and for apps that take it pasted.
                try context.console.write(Text.singleLine(enrollment.uri) + "\n")
                if !(context.console.outputIsTerminal && QRCode.show(enrollment.uri)) {
                    context.console.writeError("tokenctl: add the otpauth:// URI above to an authenticator app (on a terminal with qrencode installed, a QR code shows here), then give the code it shows\n")
                }
                let code = try readCode(SecretInput(context.console), prompt: "Code from the authenticator app: ")
                let finish = AccountArgs.Action.finishSecondFactorEnrollment(handle: enrollment.handle, code: code, name: name, timeout: connection.timeout)
                _ = try Tokenctl.Account.call(finish, account: account, verb: "mfa enroll", connection: connection, context: context)
                try context.console.write("\(Text.singleLine(account)): TOTP second factor enrolled; the session was renewed (same user)\n")
            }
        }

        struct List: TokenctlCommand {
            static let configuration = CommandConfiguration(abstract: "List the user's second factors: enrollment id, kind, name.")

            @Argument(help: "The account, as named in config.toml.", completion: .custom(AccountCompletion.names))
            var account: String

            @OptionGroup var connection: ConnectionOptions

            func validate() throws { try validateAccount(account) }

            func execute(_ context: CommandContext) throws(TokenctlError) {
                let response = try Tokenctl.Account.call(
                    .show(timeout: connection.timeout), account: account, verb: "mfa list", connection: connection, context: context)
                guard let user = response.user else { throw .protocolMismatch("an account reply without the user") }
                guard let factors = user.factors, !factors.isEmpty else {
                    try context.console.write("\(Text.singleLine(account)): no second factors\n")
                    return
                }
                var text = ""
                for factor in factors {
                    let columns = [factor.id, factor.kind.rawValue, factor.displayName ?? "-", factor.enrolledAt ?? "-"] + (factor.phone.map { [$0] } ?? [])
                    text += columns.map(Text.singleLine).joined(separator: "  ") + "\n"
                }
                try context.console.write(text)
            }
        }

        struct Remove: TokenctlCommand {
            static let configuration = CommandConfiguration(
                abstract: "Remove (withdraw) one of the user's second factors.",
                discussion: "The session is renewed (same user).")

            @Argument(help: "The account, as named in config.toml.", completion: .custom(AccountCompletion.names))
            var account: String

            @Argument(help: "The factor's enrollment id (see: tokenctl account mfa list).")
            var enrollmentID: String

            @OptionGroup var connection: ConnectionOptions

            func validate() throws {
                try validateAccount(account)
                guard !enrollmentID.isEmpty else { throw ValidationError("the enrollment id must not be empty") }
            }

            func execute(_ context: CommandContext) throws(TokenctlError) {
                _ = try Tokenctl.Account.call(
                    .removeSecondFactor(enrollmentID, timeout: connection.timeout), account: account, verb: "mfa remove", connection: connection, context: context)
                try context.console.write("\(Text.singleLine(account)): second factor \(Text.singleLine(enrollmentID)) removed; the session was renewed (same user)\n")
            }
        }
    }
}

/// A QR code on the terminal through `qrencode -t ANSIUTF8` (optional: the URI is printed either
/// way). The URI holds the TOTP secret, so it goes to qrencode's stdin, never its argv, which
/// every user can read in /proc.
enum QRCode {
    /// False when qrencode could not be run or failed.
    static func show(_ text: String) -> Bool {
        var pipeEnds: [Int32] = [-1, -1]
        // tokend_spawn closes every other descriptor in the child: no close-on-exec needed.
        guard pipe(&pipeEnds) == 0 else { return false }
        let spawned = ChildSpawn.start(["qrencode", "-t", "ANSIUTF8"], stdin: pipeEnds[0], stdout: 1)
        close(pipeEnds[0])
        guard case .success(let pid) = spawned else {
            close(pipeEnds[1])
            return false
        }
        let bytes = Array(text.utf8)
        let written = bytes.withUnsafeBytes { write(pipeEnds[1], $0.baseAddress, $0.count) }
        close(pipeEnds[1])
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0, errno == EINTR {}
        return written == bytes.count && status == 0
    }
}
