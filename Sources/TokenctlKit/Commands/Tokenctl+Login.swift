import ArgumentParser
import CTokendShims
import TokendCore
import TokendProtocol
import TokendSystem
#if canImport(Glibc)
import Glibc
#endif

extension Tokenctl {
    /// `tokenctl login ACCOUNT`: the daemon runs the sign-in (it holds the HTTP client and every
    /// secret); tokenctl reads a password or custom token from the user and relays the progress.
    struct Login: TokenctlCommand {
        static let configuration = CommandConfiguration(
            abstract: "Sign an account in; tokend stores and refreshes the session.",
            discussion: """
                OpenID Connect: a browser sign-in (the URL is printed on a line of its own and \
                opened when there is a display), or --device for a code to enter on another device. \
                Firebase: --email ADDRESS (the password is read from a prompt without echo, or \
                from the first line of stdin; add --create to sign up), --anonymous, \
                --custom-token (the token on stdin), or --idp ID: a sign-in at an identity provider \
                the project enables (google.com, microsoft.com, github.com, apple.com, oidc.NAME; --google is \
                --idp google.com; add --device for the provider's device grant). A user with a \
                second factor (TOTP) is asked for its code: a prompt on a terminal, else the next line \
                of stdin (after the password); --factor ID picks one of several. Secrets are never \
                taken from arguments or the environment. --timeout is how long the sign-in may take \
                (default: 300 seconds).
                """)

        @Argument(help: "The account, as named in config.toml.", completion: .custom(AccountCompletion.names))
        var account: String

        @Flag(help: "Print the sign-in URL instead of opening a browser.")
        var noBrowser = false

        @Flag(help: "OpenID Connect, or with --idp: the device grant (a code to enter on another device).")
        var device = false

        @Option(help: ArgumentHelp("Firebase: sign in with this email address and a password.", valueName: "address"))
        var email: String?

        @Flag(help: "Firebase, with --email: create the user (sign up) instead of signing in.")
        var create = false

        @Flag(help: "Firebase: sign in as a new anonymous user.")
        var anonymous = false

        @Flag(help: "Firebase: sign in with a custom token read from stdin.")
        var customToken = false

        @Flag(help: "Firebase: sign in with a Google account (--idp google.com).")
        var google = false

        @Option(help: ArgumentHelp("Firebase: sign in at this identity provider (microsoft.com, github.com, apple.com, oidc.NAME, …).", valueName: "id"))
        var idp: String?

        @Option(help: ArgumentHelp("Firebase: the second factor to answer when the user has several (see tokenctl account mfa list).", valueName: "id"))
        var factor: String?

        @OptionGroup var connection: ConnectionOptions

        func validate() throws {
            try validateAccount(account)
            if let factor, factor.isEmpty { throw ValidationError("--factor needs an enrollment id") }
            let chosen = [email != nil, anonymous, customToken, google, idp != nil].filter { $0 }.count + (device && identityProvider == nil ? 1 : 0)
            guard chosen <= 1 else { throw ValidationError("choose one of --device, --email, --anonymous, --custom-token, --google and --idp ID") }
            if let idp, idp.isEmpty { throw ValidationError("--idp needs a provider id, such as microsoft.com") }
            if create, email == nil { throw ValidationError("--create goes with --email ADDRESS") }
            if let email, email.isEmpty { throw ValidationError("--email needs an address") }
        }

        var method: LoginMethod {
            if identityProvider != nil { return .idp }
            if device { return .device }
            if email != nil { return .email }
            if anonymous { return .anonymous }
            if customToken { return .customToken }
            return .browser
        }

        /// `--idp ID`, or `google.com` for `--google`.
        var identityProvider: String? { google ? "google.com" : idp }

        /// The daemon's own default (`SharedDefaults`).
        static let defaultTimeout = SharedDefaults.loginTimeout
        /// The daemon gives a stuck provider this much longer than the sign-in's timeout before it
        /// gives up itself; tokenctl waits that long too, so the daemon's answer is the one seen.
        static let daemonGrace = SharedDefaults.loginGrace

        func execute(_ context: CommandContext) throws(TokenctlError) {
            _ = tokend_set_not_dumpable()
            let input = SecretInput(context.console)
            let secret = try readSecret(input)
            let timeout = connection.timeoutOption ?? Self.defaultTimeout
            let login = LoginArgs(
                account: account, method: method, email: email, create: create, secret: secret, timeout: timeout,
                identityProvider: identityProvider, device: identityProvider != nil && device, factor: factor)
            var challenge: LoginProgress?
            var response = try signIn(.login(login), timeout: timeout, context: context, challenge: &challenge)
            // The user has a second factor: its code finishes the sign-in the daemon holds.
            if !response.ok, response.error?.message.hasPrefix(Self.secondFactorRequired) == true, let asked = challenge, let handle = asked.handle {
                let chosen = asked.factors?.first { $0.id == asked.factor }
                let named = chosen?.displayName.map { " \"\(Text.singleLine($0))\"" } ?? ""
                let code = try readCode(input, prompt: "Code from the authenticator app (\(Text.singleLine(asked.factor ?? "TOTP"))\(named)): ")
                let finish = LoginArgs(account: account, method: .secondFactor, secret: code, timeout: timeout, handle: handle)
                response = try signIn(.login(finish), timeout: timeout, context: context, challenge: &challenge)
            }
            try finish(response, context: context)
        }

        /// The code that ends the first step's stream, before the provider's reason.
        static let secondFactorRequired = "SECOND_FACTOR_REQUIRED"

        /// One `login` command and its relayed stream; a `second_factor` line lands in `challenge`.
        func signIn(_ command: Command, timeout: Double, context: CommandContext, challenge: inout LoginProgress?) throws(TokenctlError) -> Response {
            let daemon = try DaemonConnection(options: connection, context: context)
            try daemon.send(command, readTimeout: timeout + Self.daemonGrace + ConnectionSettings.answerMargin, timeout: timeout)
            let opener = BrowserOpener(environment: context.environment, disabled: noBrowser)
            return try relayStream(daemon, timeout: timeout, console: context.console, opener: opener, challenge: &challenge)
        }

        /// The password (`--email`) or custom token: a no-echo prompt on a terminal, else the
        /// first line of stdin. Never argv, never the environment.
        func readSecret(_ input: SecretInput) throws(TokenctlError) -> String? {
            if let email {
                return try input.read(what: "password", prompt: "Password for \(Text.singleLine(email)): ", trim: false)
            }
            if customToken {
                return try input.read(what: "custom token", prompt: "Custom token for \(Text.singleLine(account)): ", trim: true)
            }
            return nil
        }

        func finish(_ response: Response, context: CommandContext) throws(TokenctlError) {
            guard response.ok else {
                guard let error = response.error else { throw .protocolMismatch("a failure without an error") }
                throw TokenctlError(login: error, account: account, environment: context.environment)
            }
            let how = response.signInProvider.map { " (\(Text.singleLine($0)))" } ?? ""
            try context.console.write("\(Text.singleLine(account)) signed in\(how)\(expiry(of: response, now: context.now()))\n")
            if response.replacedOtherUser == true {
                // Worth a line of its own: scripts using the account now act as someone else.
                try context.console.write("note: \(Text.singleLine(account)) held a session of a different user, which this sign-in replaced\n")
            }
        }
    }
}

extension TokenctlError {
    /// A failed sign-in: the daemon's message says what the provider said; the next step says
    /// what to run.
    init(login error: TokendError, account: String, environment: Environment) {
        let said = Text.singleLine(error.message)
        let name = Text.singleLine(account)
        switch error.code {
        case .needsLogin:
            self.init(.needsLogin, "signing \(name) in failed: \(said)", next: "then run: tokenctl login \(name) again")
        case .configError:
            self.init(.configuration, "signing \(name) in failed: \(said)", next: "then run: tokenctl login \(name) again (config: \(Self.configPath(environment)))")
        case .unavailable:
            self.init(.temporary, "signing \(name) in failed: \(said)", next: Self.saysWhen(said) ? "" : "try again later")
        case .badRequest:
            self.init(.usage, "tokend refused the sign-in: \(said)", next: "see: tokenctl login --help")
        default:
            self.init(daemon: error, account: account, environment: environment)
        }
    }
}

/// Reads a secret: a no-echo prompt on a terminal, else the first line of stdin (without its
/// line ending). Never argv, never the environment.
func readSecretInput(_ console: any Console, what: String, prompt: String, trim: Bool) throws(TokenctlError) -> String {
    try SecretInput(console).read(what: what, prompt: prompt, trim: trim)
}

/// Reads a second factor's code, checked here so that a typo does not spend the daemon's
/// single-use handle.
func readCode(_ input: SecretInput, prompt: String) throws(TokenctlError) -> String {
    let code = try input.read(what: "code", prompt: prompt, trim: true)
    guard SecondFactor.isPlausibleCode(code) else {
        throw TokenctlError(.usage, "the code must be the 4 to 10 digits the authenticator app shows", next: "run the command again with the current code")
    }
    return code
}

/// Secrets a command reads one after another (a password, then a second factor's code): each
/// from its own no-echo prompt on a terminal, else successive lines of stdin, read once.
final class SecretInput {
    let console: any Console
    /// Stdin's lines not taken yet; nil until stdin is read.
    private var lines: [[UInt8]]?

    init(_ console: any Console) {
        self.console = console
    }

    func read(what: String, prompt: String, trim: Bool) throws(TokenctlError) -> String {
        let limit = ImportInput.maximumLength
        var line: [UInt8]
        if console.inputIsTerminal {
            line = try console.readSecretLine(prompt: prompt, limit: limit)
            guard line.count <= limit else { throw TokenctlError(.usage, "the \(what) is longer than \(limit / 1024) KiB", next: "type only the \(what)") }
        } else {
            if lines == nil {
                let input = try console.readInput(limit: limit)
                guard input.count <= limit else {
                    throw TokenctlError(.usage, "stdin holds more than \(limit / 1024) KiB", next: "pipe in only the \(what)")
                }
                lines = input.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).map(Array.init)
            }
            line = lines?.isEmpty == false ? lines?.removeFirst() ?? [] : []
        }
        if line.last == UInt8(ascii: "\r") { line.removeLast() }
        guard let text = String(validating: line, as: UTF8.self) else {
            throw TokenctlError(.usage, "the \(what) is not UTF-8 text", next: "type it at the prompt or pipe it on stdin")
        }
        let secret = trim ? Text.trim(text) : text
        guard !secret.isEmpty else {
            throw TokenctlError(.usage, "no \(what) was given", next: "type it at the prompt, or pipe it on stdin, one secret a line (never as an argument)")
        }
        return secret
    }
}

/// Relays a streamed sign-in (`login`, `account upgrade --google`) until its response line:
/// URLs on a line of their own (and opened when there is a display), device codes, waits.
func relayStream(_ daemon: DaemonConnection, timeout: Double, console: any Console, opener: BrowserOpener) throws(TokenctlError) -> Response {
    var challenge: LoginProgress?
    return try relayStream(daemon, timeout: timeout, console: console, opener: opener, challenge: &challenge)
}

/// As above; a `second_factor` line (the user has a second factor) is kept in `challenge`.
func relayStream(
    _ daemon: DaemonConnection, timeout: Double, console: any Console, opener: BrowserOpener, challenge: inout LoginProgress?
) throws(TokenctlError) -> Response {
    // The page handed to the browser holds the URL: it goes once the sign-in has ended.
    defer { opener.removePages() }
    while true {
        let line = try daemon.receiveLine(timeout: timeout)
        if let response = try? JSONDecoder().decode(Response.self, from: Data(line)) { return response }
        guard let progress = try? JSONDecoder().decode(LoginProgress.self, from: Data(line)) else {
            throw .protocolMismatch("a login line this tokenctl cannot read")
        }
        switch progress.progress {
        case .openURL:
            guard let url = progress.url else { continue }
            // The URL alone on its line: easy to copy, and to pick out for scripts and tests.
            try console.write("Open this page in a browser to sign in:\n\(Text.singleLine(url))\n")
            opener.open(url)
        case .userCode:
            let uri = Text.singleLine(progress.verificationURI ?? "")
            try console.write("To sign in, visit \(uri) and enter the code: \(Text.singleLine(progress.userCode ?? ""))\n")
            if let complete = progress.verificationURIComplete {
                try console.write("or open:\n\(Text.singleLine(complete))\n")
            }
        case .waiting:
            try console.write("\(Text.singleLine(progress.message ?? "waiting for the sign-in"))…\n")
        case .secondFactor:
            challenge = progress
        }
    }
}

/// Opens a sign-in page with `xdg-open` when a graphical session is there to show it.
///
/// The authorization URL (its `state`, `nonce`, PKCE challenge and loopback port) never goes in
/// a program's argv or environment, where every user on the machine can read it
/// (/proc/PID/cmdline): the browser is given a 0600 page in a 0700 directory of the user's that
/// redirects to it, and the page is removed when the sign-in ends (docs/security.md, "Browser
/// sign-in").
final class BrowserOpener {
    let enabled: Bool
    private var directory: (path: String, made: Bool)?
    private var pages: [String] = []

    init(environment: Environment, disabled: Bool) {
        let display = [environment["DISPLAY"], environment["WAYLAND_DISPLAY"]].contains { !($0 ?? "").isEmpty }
        enabled = display && !disabled
        self.environment = environment
    }

    private let environment: Environment

    /// `$XDG_RUNTIME_DIR/tokend` (the user's tmpfs, never on disk; tokend's own socket directory),
    /// else a fresh 0700 directory under `$TMPDIR` or /tmp.
    static func privateDirectory(_ environment: Environment) -> (path: String, made: Bool)? {
        if let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") {
            let directory = runtime + "/tokend"
            _ = mkdir(directory, 0o700)
            var info = stat()
            if lstat(directory, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR, info.st_uid == geteuid(), info.st_mode & 0o077 == 0 {
                return (directory, false)
            }
        }
        let base = environment["TMPDIR"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? "/tmp"
        var template = Array((base + "/tokenctl-XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else { return nil }
        return (String(cString: made), true)
    }

    /// Best effort and not waited for: the URL is printed on tokenctl's own output either way.
    func open(_ url: String) {
        guard enabled, let page = writePage(url) else { return }
        // Its stdout is not tokenctl's (a script may be reading that); its stderr is.
        _ = ChildSpawn.start(["xdg-open", page], stderr: 2)
    }

    /// A page that sends the browser on to `url`, readable by the user alone; its path.
    func writePage(_ url: String) -> String? {
        if directory == nil { directory = Self.privateDirectory(environment) }
        guard let directory else { return nil }
        var template = Array((directory.path + "/sign-in-XXXXXX.html").utf8CString)
        let fd = mkstemps(&template, 5)  // mkstemps creates it 0600
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        let path = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let target = Self.attribute(url)
        let html = """
            <!DOCTYPE html><html><head><meta charset="utf-8"><meta name="referrer" content="no-referrer">\
            <meta http-equiv="refresh" content="0;url=\(target)"><title>Signing in</title></head>\
            <body><p><a href="\(target)">Continue to the sign-in page</a></p></body></html>
            """
        let bytes = Array(html.utf8)
        guard bytes.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) == bytes.count else {
            unlink(path)
            return nil
        }
        pages.append(path)
        return path
    }

    /// Removes the pages written: the URL in them is spent once the sign-in has ended.
    func removePages() {
        for page in pages { unlink(page) }
        pages = []
        if let directory, directory.made { rmdir(directory.path) }
        directory = nil
    }

    /// `text` as an HTML attribute value.
    static func attribute(_ text: String) -> String {
        var escaped = ""
        for character in text {
            switch character {
            case "&": escaped += "&amp;"
            case "\"": escaped += "&quot;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            default: escaped.append(character)
            }
        }
        return escaped
    }
}
