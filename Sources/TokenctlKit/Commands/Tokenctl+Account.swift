import ArgumentParser
import CTokendShims
import TokendCore
import TokendProtocol

extension Tokenctl {
    /// `tokenctl account VERB ACCOUNT`: Firebase account management, run by the daemon with the
    /// session it holds.
    struct Account: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Manage a Firebase account's user: show, verify-email, reset-password, upgrade, delete, mfa.",
            subcommands: [Show.self, VerifyEmail.self, ResetPassword.self, Upgrade.self, Delete.self, Mfa.self])

        /// One `account` action, its failures said as what the verb could not do.
        static func call(
            _ action: AccountArgs.Action, account: String, verb: String, connection: ConnectionOptions, context: CommandContext
        ) throws(TokenctlError) -> Response {
            let daemon = try DaemonConnection(options: connection, context: context)
            let (response, _) = try daemon.exchange(.account(AccountArgs(account: account, action: action)))
            if !response.ok, let error = response.error {
                throw TokenctlError(account: error, verb: verb, account: account, environment: context.environment)
            }
            try DaemonConnection.check(response, account: account, environment: context.environment)
            return response
        }

        struct Show: TokenctlCommand {
            static let configuration = CommandConfiguration(
                abstract: "Show the user: uid, email, verification, sign-in methods, claims of the current ID token.")

            @Argument(help: "The account, as named in config.toml.", completion: .custom(AccountCompletion.names))
            var account: String

            @Flag(help: "Print the user as one JSON object.")
            var json = false

            @OptionGroup var connection: ConnectionOptions

            func validate() throws { try validateAccount(account) }

            func execute(_ context: CommandContext) throws(TokenctlError) {
                let response = try Account.call(.show(timeout: connection.timeout), account: account, verb: "show", connection: connection, context: context)
                guard let user = response.user else { throw .protocolMismatch("an account reply without the user") }
                if json {
                    try context.console.write(String(decoding: WireCoding.encodeLine(user), as: UTF8.self))
                    return
                }
                var rows: [(String, String)] = [("uid", user.uid)]
                if let email = user.email {
                    let verified = user.emailVerified == true ? "verified" : "not verified"
                    rows.append(("email", "\(email) (\(verified))"))
                }
                if let name = user.displayName { rows.append(("name", name)) }
                rows.append(("signed in with", user.signInProvider ?? "-"))
                rows.append(("sign-in methods", user.providers.isEmpty ? "none (anonymous)" : user.providers.joined(separator: ", ")))
                if let project = user.project { rows.append(("project", project)) }
                if let tenant = user.tenant { rows.append(("tenant", tenant)) }
                if let authTime = user.authTime { rows.append(("last sign-in", authTime)) }
                if let created = user.createdAt { rows.append(("created", created)) }
                if user.disabled == true { rows.append(("disabled", "yes")) }
                if let factors = user.factors { rows.append(("second factors", factors.map(\.summary).joined(separator: ", "))) }
                if let claims = user.customClaims {
                    rows.append(("custom claims", String(decoding: WireCoding.encodeLine(claims), as: UTF8.self).trimmingSuffixNewline))
                }
                let width = rows.map(\.0.count).max() ?? 0
                var text = ""
                for (label, value) in rows {
                    text += label + String(repeating: " ", count: width - label.count + 2) + Text.singleLine(value) + "\n"
                }
                try context.console.write(text)
            }
        }

        struct VerifyEmail: TokenctlCommand {
            static let configuration = CommandConfiguration(
                commandName: "verify-email", abstract: "Send the user the email that verifies their address.")

            @Argument(help: "The account, as named in config.toml.", completion: .custom(AccountCompletion.names))
            var account: String

            @OptionGroup var connection: ConnectionOptions

            func validate() throws { try validateAccount(account) }

            func execute(_ context: CommandContext) throws(TokenctlError) {
                let response = try Account.call(
                    .verifyEmail(timeout: connection.timeout), account: account, verb: "verify-email", connection: connection, context: context)
                try context.console.write("verification email sent to \(Text.singleLine(response.email ?? "the user's address"))\n")
            }
        }

        struct ResetPassword: TokenctlCommand {
            static let configuration = CommandConfiguration(
                commandName: "reset-password",
                abstract: "Send a password-reset email (no session needed).",
                discussion: "The address defaults to the signed-in user's.")

            @Argument(help: "The account, as named in config.toml.", completion: .custom(AccountCompletion.names))
            var account: String

            @Option(help: ArgumentHelp("Where to send it (default: the session's address).", valueName: "address"))
            var email: String?

            @OptionGroup var connection: ConnectionOptions

            func validate() throws { try validateAccount(account) }

            func execute(_ context: CommandContext) throws(TokenctlError) {
                let response = try Account.call(
                    .resetPassword(email: email), account: account, verb: "reset-password", connection: connection, context: context)
                // With email-enumeration protection Firebase answers the same for unknown addresses.
                try context.console.write("password-reset email sent to \(Text.singleLine(response.email ?? "the address")) (if a user has that address)\n")
            }
        }

        struct Upgrade: TokenctlCommand {
            static let configuration = CommandConfiguration(
                abstract: "Make an anonymous user permanent, keeping its uid.",
                discussion: """
                    --email ADDRESS reads the new password from a prompt without echo, or from the \
                    first line of stdin. --idp ID links a sign-in at an identity provider the project \
                    enables (microsoft.com, github.com, oidc.NAME; --google is --idp google.com), in a \
                    browser or, with --device, with the provider's device grant.
                    """)

            @Argument(help: "The account, as named in config.toml.", completion: .custom(AccountCompletion.names))
            var account: String

            @Option(help: ArgumentHelp("Give the user this email address and a password.", valueName: "address"))
            var email: String?

            @Flag(help: "Link a Google account to the user (--idp google.com).")
            var google = false

            @Option(help: ArgumentHelp("Link an account at this identity provider (microsoft.com, github.com, oidc.NAME, …).", valueName: "id"))
            var idp: String?

            @Flag(help: "With --idp: the provider's device grant instead of the browser.")
            var device = false

            @Flag(help: "With --idp or --google: print the sign-in URL instead of opening a browser.")
            var noBrowser = false

            /// `--idp ID`, or `google.com` for `--google`.
            var identityProvider: String? { google ? "google.com" : idp }

            @OptionGroup var connection: ConnectionOptions

            func validate() throws {
                try validateAccount(account)
                guard [email != nil, google, idp != nil].filter({ $0 }).count == 1 else {
                    throw ValidationError("choose one of --email ADDRESS, --google and --idp ID")
                }
                if let idp, idp.isEmpty { throw ValidationError("--idp needs a provider id, such as microsoft.com") }
                if device, identityProvider == nil { throw ValidationError("--device goes with --idp ID") }
                if let email, email.isEmpty { throw ValidationError("--email needs an address") }
            }

            func execute(_ context: CommandContext) throws(TokenctlError) {
                _ = tokend_set_not_dumpable()
                if let email {
                    let password = try readSecretInput(
                        context.console, what: "password", prompt: "New password for \(Text.singleLine(email)): ", trim: false)
                    let response = try Account.call(
                        .upgradeWithEmail(email: email, password: password, timeout: connection.timeout), account: account, verb: "upgrade",
                        connection: connection, context: context)
                    try context.console.write("\(Text.singleLine(account)) upgraded: signed in with \(Text.singleLine(response.signInProvider ?? "password")), same uid\n")
                    return
                }
                guard let identityProvider else {
                    throw TokenctlError(.usage, "choose one of --email ADDRESS, --google and --idp ID", next: "see: tokenctl account upgrade --help")
                }
                let timeout = connection.timeoutOption ?? Login.defaultTimeout
                let upgrade = AccountArgs(account: account, action: .upgradeWithIdentityProvider(identityProvider, device: device, timeout: timeout))
                let daemon = try DaemonConnection(options: connection, context: context)
                let readTimeout = timeout + Login.daemonGrace + ConnectionOptions.defaultTimeout + ConnectionSettings.answerMargin
                try daemon.send(.account(upgrade), readTimeout: readTimeout, timeout: timeout)
                let opener = BrowserOpener(environment: context.environment, disabled: noBrowser)
                let response = try relayStream(daemon, timeout: timeout, console: context.console, opener: opener)
                // A refused link is the upgrade's failure, not the account's ("needs a new login").
                if !response.ok, let error = response.error {
                    throw TokenctlError(account: error, verb: "upgrade", account: account, environment: context.environment)
                }
                try DaemonConnection.check(response, account: account, environment: context.environment)
                try context.console.write("\(Text.singleLine(account)) upgraded: signed in with \(Text.singleLine(response.signInProvider ?? identityProvider)), same uid\n")
            }
        }

        struct Delete: TokenctlCommand {
            static let configuration = CommandConfiguration(
                abstract: "Delete the Firebase user for good, then forget the session.",
                discussion: "Without --yes it only says what would be deleted.")

            @Argument(help: "The account, as named in config.toml.", completion: .custom(AccountCompletion.names))
            var account: String

            @Flag(help: "Really delete.")
            var yes = false

            @OptionGroup var connection: ConnectionOptions

            func validate() throws { try validateAccount(account) }

            func execute(_ context: CommandContext) throws(TokenctlError) {
                _ = try Account.call(
                    .delete(confirmed: yes, timeout: connection.timeout), account: account, verb: "delete", connection: connection, context: context)
                try context.console.write("\(Text.singleLine(account)): user deleted and session forgotten\n")
            }
        }
    }
}

extension TokenctlError {
    /// A failed `account` action: what the provider said, and the command that helps.
    init(account error: TokendError, verb: String, account: String, environment: Environment) {
        let said = Text.singleLine(error.message)
        let name = Text.singleLine(account)
        switch error.code {
        case .needsLogin where said.contains("tokenctl login"):
            // The provider's refusal already names the sign-in to run (another user has it, …).
            self.init(.needsLogin, "account \(verb) for \(name) failed: \(said)", next: "")
        case .needsLogin:
            self.init(.needsLogin, "account \(verb) for \(name) failed: \(said)", next: "sign in (tokenctl login \(name) …), then repeat")
        case .configError:
            self.init(.configuration, "account \(verb) for \(name) failed: \(said)", next: "fix the project or \(Self.configPath(environment)), then repeat")
        case .unavailable:
            self.init(.temporary, "account \(verb) for \(name) failed: \(said)", next: Self.saysWhen(said) ? "" : "try again later")
        case .badRequest where verb == "delete":
            // The refusal without --yes says what would be deleted.
            self.init(.usage, "not deleted: \(said)", next: "run: tokenctl account delete \(name) --yes")
        case .badRequest:
            self.init(.usage, "account \(verb) for \(name) refused: \(said)", next: "see: tokenctl account \(verb) --help")
        default:
            self.init(daemon: error, account: account, environment: environment)
        }
    }
}

extension String {
    fileprivate var trimmingSuffixNewline: String { hasSuffix("\n") ? String(dropLast()) : self }
}
