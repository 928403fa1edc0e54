import TokendCore
import TokendProtocol

/// Every way a tokenctl command can fail, and the only place failures become exit codes
/// (sysexits, pinned by README, "Exit codes"). Commands throw these; `Tokenctl.run` reports them.
struct TokenctlError: Error, Equatable, CustomStringConvertible {
    enum Code: Equatable, CaseIterable {
        /// Bad arguments or input, or a request the daemon called `bad_request`.
        case usage
        case unknownAccount
        /// Nothing listens at the socket, or the daemon hung up or went silent.
        case notReachable
        /// Worth retrying: `unavailable`, `keyring_locked`, `keyring_unavailable`.
        case temporary
        case needsLogin
        case configuration
        /// A consumer socket's policy refuses what was asked (`forbidden`): as a configuration
        /// error, it is the config (`[consumer.NAME]`) that would have to change, and a script
        /// tells it from `needs_login` (77).
        case forbidden
        /// Stdout's reader went away (EPIPE): `watch` ends quietly on it.
        case outputClosed
        /// Everything else: `internal`, `too_large`, `unsupported_op`, protocol mismatches.
        case failure

        var exitCode: Int32 {
            switch self {
            case .usage: 64  // EX_USAGE
            case .unknownAccount: 67  // EX_NOUSER
            case .notReachable: 69  // EX_UNAVAILABLE
            case .temporary: 75  // EX_TEMPFAIL
            case .needsLogin: 77  // EX_NOPERM
            case .configuration, .forbidden: 78  // EX_CONFIG
            case .outputClosed, .failure: 1
            }
        }
    }

    var code: Code
    /// What happened, without a trailing period.
    var message: String
    /// What the user should do about it.
    var nextStep: String

    init(_ code: Code, _ message: String, next nextStep: String) {
        self.code = code
        self.message = message
        self.nextStep = nextStep
    }

    /// The one stderr line a failure gets (no newline). Control characters are flattened so a
    /// message from the daemon can neither add lines nor send terminal escapes.
    /// A message that already ends in the next step ("…; try again later") does not get it twice.
    var line: String {
        Text.singleLine(message.hasSuffix(nextStep) ? "tokenctl: \(message)" : "tokenctl: \(message); \(nextStep)")
    }

    var description: String { line }
}

extension TokenctlError {
    /// What a daemon error means for the user of `account` (nil when the request named none).
    init(daemon error: TokendError, account: String?, environment: Environment) {
        let said = Text.singleLine(error.message)
        let detail = said.isEmpty ? "" : " (\(said))"
        let name = account ?? "the account"
        switch error.code {
        case .needsLogin:
            let command = account.map { "tokenctl login \($0)" } ?? "tokenctl login ACCOUNT"
            self.init(.needsLogin, "\(name) needs a new login\(detail)", next: "run: \(command)")
        // For these four the daemon's message says what is wrong (and for a keyring, how to fix
        // it): it is the line, with the account in front where it does not name it; tokenctl's
        // own words stand in only when the daemon sent none.
        case .unknownAccount:
            self.init(
                .unknownAccount, said.isEmpty ? "no account named \"\(Text.singleLine(name))\" is configured" : said,
                next: "tokenctl list shows the configured accounts")
        case .unavailable:
            let status = account.map { "tokenctl status \($0)" } ?? "tokenctl status"
            let what = said.isEmpty ? "\(name) has no valid token right now" : account.map { "\($0): \(said)" } ?? said
            let next = said.contains(status) ? "" : Self.saysWhen(said) ? "\(status) shows the last error" : "try again later (\(status) shows the last error)"
            self.init(.temporary, what, next: next)
        case .keyringLocked:
            self.init(.temporary, said.isEmpty ? "the keyring is locked" : said, next: said.isEmpty ? "unlock your login keyring, then try again" : "then try again")
        case .keyringUnavailable:
            if said.isEmpty {
                self.init(
                    .temporary, "no keyring (Secret Service) is available",
                    next: "start or unlock your login keyring (gnome-keyring-daemon), then try again")
            } else {
                self.init(.temporary, said, next: Self.saysWhen(said) ? "" : "then try again")
            }
        case .configError where RefreshFailure.apiKeyRefusals.keys.contains(where: { said.hasPrefix($0 + ": ") }):
            // A key restriction (or the key's project) is fixed in the Cloud console, not the
            // file; the session is kept, and the next token request that needs a fresh token
            // tries the key again.
            let command = account.map { "tokenctl token \($0)" } ?? "tokenctl token ACCOUNT"
            self.init(.configuration, "the API key is refused\(detail)", next: "fix the key or its project in the Google Cloud console as said (the session is kept), then: \(command)")
        case .configError:
            self.init(
                .configuration, "tokend's configuration is wrong\(detail)",
                next: "fix \(Self.configPath(environment)) (see the message), then: systemctl --user reload tokend")
        case .forbidden:
            self.init(
                .forbidden, said.isEmpty ? "this socket's policy does not allow that" : said,
                next: "ask within what the policy allows, or have [consumer.NAME] in tokend's configuration widened")
        case .badRequest:
            self.init(.usage, "tokend refused the request\(detail)", next: "check the arguments (tokenctl --help)")
        case .tooLarge:
            self.init(.failure, "the request was too large for tokend\(detail)", next: "send at most 64 KiB")
        case .unsupportedOp:
            self.init(
                .failure, "tokend does not know this operation\(detail)",
                next: "install tokend and tokenctl from the same release, then: systemctl --user restart tokend")
        case .internal:
            self.init(.failure, "tokend failed internally\(detail)", next: "see its log: journalctl --user -u tokend")
        default:
            // A code newer than this tokenctl: still one line, still an exit status scripts can test.
            self.init(.failure, "tokend answered \(Text.singleLine(error.code.rawValue))\(detail)", next: "see its log: journalctl --user -u tokend")
        }
    }

    /// A failure of the connection itself: the daemon is not there, went away or went silent.
    init(client failure: BlockingClient.Failure, path: String, timeout: Double) {
        self.init(connection: failure.code, detail: failure.description, path: path, timeout: timeout)
    }

    init(connection code: BlockingClient.Failure.Code, detail: String, path: String, timeout: Double) {
        switch code {
        case .notReachable:
            self.init(
                .notReachable, "tokend is not running at \(path) (\(Self.reason(detail)))",
                next: "start it: systemctl --user start tokend.socket")
        case .closed:
            self.init(
                .notReachable, "tokend at \(path) closed the connection before answering",
                next: "check that it runs: systemctl --user status tokend")
        case .timedOut:
            self.init(
                .notReachable, "tokend at \(path) did not answer within \(Text.seconds(timeout))",
                next: "check its log (journalctl --user -u tokend) or pass a longer --timeout")
        case .protocolError:
            self.init(
                .failure, Text.singleLine(detail),
                next: "install tokend and tokenctl from the same release")
        case .foreignServer:
            self.init(
                .notReachable, Text.singleLine(detail),
                next: "another user's program holds that socket: stop it, or point --socket at your own tokend")
        }
    }

    /// The daemon's message already ends in when to retry ("…; try again in a moment", "next
    /// try at …"): a "try again later" after it would say it twice. A provider's own words
    /// quoted in it ("(… you can try again later.)") are not the daemon's advice. "…; check the
    /// network and try again" ends in it too ("try again; try again later" before issue 46).
    static func saysWhen(_ said: String) -> Bool {
        said.contains("; try again") || said.hasSuffix(" try again") || said.contains("next try at")
    }

    static func protocolMismatch(_ what: String) -> TokenctlError {
        TokenctlError(.failure, "tokend sent \(what)", next: "install tokend and tokenctl from the same release")
    }

    /// The config path as the daemon resolves it (docs/architecture.md, "Names and places"), for the config_error hint.
    static func configPath(_ environment: Environment) -> String {
        SharedDefaults.configPath(environment: environment)
    }

    /// BlockingClient says "tokend is not reachable at PATH (No such file or directory)";
    /// keep only the errno text so the line does not repeat itself.
    static func reason(_ description: String) -> String {
        guard description.hasSuffix(")"), let open = description.lastIndex(of: "(") else { return description }
        return String(description[description.index(after: open)..<description.index(before: description.endIndex)])
    }
}
