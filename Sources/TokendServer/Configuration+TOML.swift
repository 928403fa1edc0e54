import TOMLKit
import TokendCore
import TokendProtocol

extension Configuration {
    /// The keys an account table may have; anything else is a typo worth an error, not silence.
    static let firebaseKeys: Set<String> = [
        "provider", "api_key", "emulator", "refresh_before", "git_hosts", "git_username", PlainHTTP.optInKey, "google_client_id",
        "google_client_secret",
    ]
    static let oidcKeys: Set<String> = ["provider", "issuer", "client_id", "client_secret", "scopes", "refresh_before", "git_hosts", "git_username", PlainHTTP.optInKey]
    static let topLevelKeys: Set<String> = ["account", "hooks", "notify"]
    /// Account names end up in keyring attributes, command lines and log lines: keep them tame.
    static let accountNameCharacters = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
    /// Longest account name: plenty for people, short enough for a status table.
    static let maximumAccountNameLength = 64

    /// `--config`, else `TOKEND_CONFIG`, else `$XDG_CONFIG_HOME/tokend/config.toml`, else
    /// `~/.config/tokend/config.toml`.
    public static func defaultPath(explicit: String?, environment: [String: String]) -> String {
        if let explicit, !explicit.isEmpty { return explicit }
        if let path = environment["TOKEND_CONFIG"], !path.isEmpty { return path }
        if let base = environment["XDG_CONFIG_HOME"], !base.isEmpty { return base + "/tokend/config.toml" }
        return (environment["HOME"] ?? "") + "/.config/tokend/config.toml"
    }

    /// Reads and checks the file. A missing file is an empty configuration (the daemon can run
    /// before any account is set up); everything else that is wrong is an error.
    public static func load(path: String, environment: [String: String]) throws(ConfigurationError) -> Configuration {
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            if !FileManager.default.fileExists(atPath: path) { return Configuration(path: path) }
            throw ConfigurationError(path: path, line: nil, key: nil, message: "cannot be read: \(error.localizedDescription)")
        }
        return try parse(text, path: path, environment: environment)
    }

    public static func parse(_ text: String, path: String, environment: [String: String]) throws(ConfigurationError) -> Configuration {
        let root: TOMLTable
        do {
            root = try TOMLTable(string: text)
        } catch let error as TOMLParseError {
            throw ConfigurationError(path: path, line: error.source.begin.line, key: nil, message: error.description)
        } catch {
            throw ConfigurationError(path: path, line: nil, key: nil, message: "is not valid TOML")
        }
        let locator = KeyLocator(text: text)
        func fail(_ key: String, table: String?, _ message: String) -> ConfigurationError {
            ConfigurationError(path: path, line: locator.line(of: key, inTable: table), key: table.map { "\($0).\(key)" } ?? key, message: message)
        }
        for key in root.keys where !topLevelKeys.contains(key) {
            throw fail(key, table: nil, "unknown top-level key; expected [account.NAME] tables, [hooks] and notify")
        }
        var configuration = Configuration(path: path)
        if let value = root["notify"] {
            guard let notify = value.bool else { throw fail("notify", table: nil, "must be true or false") }
            configuration.notify = notify
        }
        if let value = root["hooks"] {
            configuration.hooks = try hooks(value, fail: fail)
        }
        guard let accountsValue = root["account"] else { return configuration }
        guard let accounts = accountsValue.table else { throw fail("account", table: nil, "must be a table of accounts: [account.NAME]") }
        for name in accounts.keys.sorted() {
            let tableName = "account.\(name)"
            guard !name.isEmpty, name.count <= maximumAccountNameLength, name.allSatisfy(accountNameCharacters.contains) else {
                throw ConfigurationError(path: path, line: locator.line(ofTable: tableName), key: tableName,
                    message: "account names use letters, digits, '.', '_' and '-' (at most \(maximumAccountNameLength))")
            }
            guard let table = accounts[name]?.table else { throw fail(name, table: "account", "must be a table") }
            func string(_ key: String, required: Bool) throws(ConfigurationError) -> String? {
                guard let value = table[key] else {
                    if required { throw ConfigurationError(path: path, line: locator.line(ofTable: tableName), key: "\(tableName).\(key)", message: "is required") }
                    return nil
                }
                guard let string = value.string, !string.trimmed.isEmpty else { throw fail(key, table: tableName, "must be a non-empty string") }
                return string.trimmed
            }
            guard let provider = try string("provider", required: true) else { continue }
            var allowPlainHTTP = false
            if let value = table[PlainHTTP.optInKey] {
                guard let flag = value.bool else { throw fail(PlainHTTP.optInKey, table: tableName, "must be true or false") }
                allowPlainHTTP = flag
            }
            let allowed: Set<String>
            let accountProvider: AccountConfiguration.Provider
            switch provider {
            case "firebase":
                allowed = firebaseKeys
                let apiKey = try string("api_key", required: true) ?? ""
                let configured = try string("emulator", required: false)
                let emulator = configured ?? environment[FirebaseEmulator.variable].flatMap { $0.isEmpty ? nil : $0 }
                if let emulator, !allowPlainHTTP, !PlainHTTP.isLoopback(PlainHTTP.host(ofAuthority: Substring(emulator))) {
                    let source = configured == nil ? "\(FirebaseEmulator.variable) (\(emulator)) in tokend's environment" : "an emulator on \(emulator)"
                    throw ConfigurationError(path: path, line: locator.line(ofTable: tableName), key: tableName,
                        message: "\(source) would get refresh tokens over plain HTTP off this machine; use a loopback emulator, or set \(PlainHTTP.optInKey) = true")
                }
                accountProvider = .firebase(apiKey: apiKey, emulatorHost: emulator)
            case "oidc":
                allowed = oidcKeys
                let issuer = try string("issuer", required: true) ?? ""
                let plainHost = PlainHTTP.host(ofURL: issuer)
                guard issuer.lowercased().hasPrefix("https://") || plainHost.map({ allowPlainHTTP || PlainHTTP.isLoopback($0) }) == true else {
                    throw fail("issuer", table: tableName, "must be an https:// URL (plain http only on loopback, or with \(PlainHTTP.optInKey) = true)")
                }
                var scopes = ["openid"]
                if let value = table["scopes"] {
                    guard let array = value.array, let strings = Optional(array.compactMap(\.string)), strings.count == array.count else {
                        throw fail("scopes", table: tableName, "must be an array of strings")
                    }
                    scopes = strings
                }
                accountProvider = .oidc(issuer: issuer, clientID: try string("client_id", required: true) ?? "",
                    clientSecret: try string("client_secret", required: false), scopes: scopes)
            default:
                throw fail("provider", table: tableName, "must be \"firebase\" or \"oidc\", not \"\(provider)\"")
            }
            for key in table.keys.sorted() where !allowed.contains(key) {
                throw fail(key, table: tableName, "unknown key for a \(provider) account (known: \(allowed.sorted().joined(separator: ", ")))")
            }
            // Firebase's Google sign-in: the OAuth client Google issued for this app.
            var google: GoogleClient? = nil
            if provider == "firebase", let clientID = try string("google_client_id", required: false) {
                google = GoogleClient(clientID: clientID, clientSecret: try string("google_client_secret", required: false))
            } else if provider == "firebase", table["google_client_secret"] != nil {
                throw fail("google_client_secret", table: tableName, "goes with google_client_id")
            }
            var refreshBefore = RefreshPolicy.defaultRefreshBefore
            if let value = table["refresh_before"] {
                guard let seconds = value.int.map(Double.init) ?? value.string.flatMap(DurationText.seconds), seconds > 0 else {
                    throw fail("refresh_before", table: tableName, "must be a duration like \"5m\", \"90s\" or a number of seconds")
                }
                refreshBefore = seconds
            }
            var account = AccountConfiguration(name: name, provider: accountProvider, refreshBefore: refreshBefore)
            if let value = table["git_hosts"] {
                let strings = value.array?.compactMap(\.string) ?? []
                guard let array = value.array, strings.count == array.count, strings.allSatisfy({ GitHostClaim($0) != nil }) else {
                    throw fail("git_hosts", table: tableName, "must be an array of hosts like \"git.example.com\" or \"github.com/my-org\"")
                }
                account.gitHosts = strings
            }
            account.gitUsername = try string("git_username", required: false)
            account.google = google
            configuration.accounts[name] = account
        }
        return configuration
    }
}

extension Configuration {
    /// `[hooks]`: every key an event name, every value a non-empty argv (run without a shell).
    static func hooks(
        _ value: TOMLValueConvertible, fail: (String, String?, String) -> ConfigurationError
    ) throws(ConfigurationError) -> [String: [String]] {
        guard let table = value.table else { throw fail("hooks", nil, "must be a table: [hooks] with event = [\"program\", \"argument\", …]") }
        let events = Set(Event.Kind.allCases.map(\.rawValue))
        var hooks: [String: [String]] = [:]
        for event in table.keys.sorted() {
            guard events.contains(event) else {
                throw fail(event, "hooks", "is not an event; known: \(events.sorted().joined(separator: ", "))")
            }
            let argv = table[event]?.array?.compactMap(\.string) ?? []
            guard let array = table[event]?.array, !argv.isEmpty, argv.count == array.count, !argv[0].isEmpty else {
                throw fail(event, "hooks", "must be a non-empty array of strings: [\"program\", \"argument\", …] (no shell)")
            }
            hooks[event] = argv
        }
        return hooks
    }
}

enum FirebaseEmulator {
    /// The variable the Firebase SDKs and CLI use to point at an emulator.
    static let variable = "FIREBASE_AUTH_EMULATOR_HOST"
}

/// Finds the line of a table header or a key in TOML text, for error messages: TOMLKit reports
/// positions for syntax errors only.
struct KeyLocator {
    let lines: [Substring]

    init(text: String) {
        lines = text.split(separator: "\n", omittingEmptySubsequences: false)
    }

    func line(ofTable table: String) -> Int? {
        lines.firstIndex { header(of: $0) == table }.map { $0 + 1 }
    }

    func line(of key: String, inTable table: String?) -> Int? {
        var current: String? = nil
        for (index, line) in lines.enumerated() {
            if let header = header(of: line) {
                current = header
                continue
            }
            guard current == table else { continue }
            let name = line.split(separator: "=", maxSplits: 1).first.map { $0.trimmed.trimmingQuotes } ?? ""
            if name == key { return index + 1 }
        }
        return table.flatMap(line(ofTable:))
    }

    private func header(of line: Substring) -> String? {
        let trimmed = line.trimmed
        guard trimmed.hasPrefix("["), let close = trimmed.firstIndex(of: "]") else { return nil }
        let inside = trimmed[trimmed.index(after: trimmed.startIndex)..<close].trimmed
        return inside.split(separator: ".").map { $0.trimmed.trimmingQuotes }.joined(separator: ".")
    }
}

extension String {
    fileprivate var trimmingQuotes: String {
        guard count >= 2, let first, first == last, first == "\"" || first == "'" else { return self }
        return String(dropFirst().dropLast())
    }
}
