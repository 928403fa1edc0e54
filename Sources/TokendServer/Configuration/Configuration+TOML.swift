import TOMLKit
import TokendCore
import TokendProtocol
import TokendProviders

extension Configuration {
    /// Keys every account table may have, whatever its provider; the rest belong to the provider.
    static let commonKeys: Set<String> = ["provider", "refresh_before", "git_hosts", "git_username", "registry_hosts", "registry_username", "sink", "store", "fleet", PlainHTTP.optInKey]
    static let topLevelKeys: Set<String> = Set(["account", "hooks", "notify", "fleet", "consumer"]).union(storeKeys)
    /// Account names end up in keyring attributes, command lines and log lines: keep them tame.
    static let accountNameCharacters = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
    /// Longest account name: plenty for people, short enough for a status table.
    static let maximumAccountNameLength = 64

    /// The path tokenctl names too (`SharedDefaults.configPath`).
    public static func defaultPath(explicit: String?, environment: [String: String]) -> String {
        SharedDefaults.configPath(explicit: explicit, environment: Environment(environment))
    }

    /// Reads and checks the file. A missing file is an empty configuration (the daemon can run
    /// before any account is set up); everything else that is wrong is an error.
    /// A file that others could have written is refused (ConfigurationFile).
    public static func load(path: String, environment: [String: String]) throws(ConfigurationError) -> Configuration {
        guard let contents = try ConfigurationFile.read(path) else { return Configuration(path: path) }
        var configuration = try parse(contents.text, path: path, environment: environment)
        if contents.othersCanRead, let line = secretLine(in: contents.text) {
            // A client secret identifies the program, not the user, but it is still not for
            // every account on the machine to read.
            configuration.warnings.append("\(path):\(line): client_secret is in a file other users can read; run: chmod go-r \(path)")
        }
        return configuration
    }

    /// The first line that sets a client secret (`client_secret`, `google_client_secret`).
    static func secretLine(in text: String) -> Int? {
        for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let key = line.drop { $0 == " " || $0 == "\t" }.prefix { $0 != "=" && $0 != " " && $0 != "\t" }
            if key.hasSuffix("client_secret") { return index + 1 }
        }
        return nil
    }

    public static func parse(
        _ text: String, path: String, environment: [String: String], registry: ProviderRegistry = .standard
    ) throws(ConfigurationError) -> Configuration {
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
        func withConsumers(_ configuration: Configuration) throws(ConfigurationError) -> Configuration {
            var configuration = configuration
            configuration.consumers = try consumers(root, accounts: configuration.accounts, locator: locator, path: path, environment: environment)
            return configuration
        }
        for key in root.keys where !topLevelKeys.contains(key) {
            throw fail(key, table: nil, "unknown top-level key; expected [account.NAME] and [consumer.NAME] tables, [hooks], [fleet], notify, store, pass_prefix and tpm2_tcti")
        }
        var configuration = Configuration(path: path)
        if let value = root["notify"] {
            guard let notify = value.bool else { throw fail("notify", table: nil, "must be true or false") }
            configuration.notify = notify
        }
        if let value = root["hooks"] {
            configuration.hooks = try hooks(value, fail: fail)
        }
        configuration.stores = try storeSettings(root, fail: fail)
        configuration.fleet = try fleetSettings(root, fail: fail)
        // Consumers name accounts, so they are read once the accounts are.
        guard let accountsValue = root["account"] else { return try withConsumers(configuration) }
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
            guard let descriptor = registry.descriptor(named: provider) else {
                throw fail("provider", table: tableName, "must be one of \(registry.names.map { "\"\($0)\"" }.joined(separator: ", ")), not \"\(provider)\"")
            }
            let allowed = commonKeys.union(descriptor.keys)
            for key in table.keys.sorted() where !allowed.contains(key) {
                throw fail(key, table: tableName, "unknown key for a \(provider) account (known: \(allowed.sorted().joined(separator: ", ")))")
            }
            var values: [String: ProviderConfigValue] = [:]
            for key in table.keys where descriptor.keys.contains(key) {
                values[key] = table[key].map(Self.providerValue) ?? .other
            }
            // Providers check their endpoints against the plain-HTTP rule themselves.
            values[PlainHTTP.optInKey] = .boolean(allowPlainHTTP)
            let accountProvider: any ProviderSettings
            do {
                accountProvider = try descriptor.parse(values, environment)
            } catch {
                if let key = error.key, table[key] == nil {
                    // A key below the account's table (`idp."x".client_id`): its own line.
                    let line = locator.line(ofPath: "\(tableName).\(key)") ?? locator.line(ofTable: tableName)
                    throw ConfigurationError(path: path, line: line, key: "\(tableName).\(key)", message: error.message)
                }
                throw error.key.map { fail($0, table: tableName, error.message) }
                    ?? ConfigurationError(path: path, line: locator.line(ofTable: tableName), key: tableName, message: error.message)
            }
            var refreshBefore = RefreshPolicy.defaultRefreshBefore
            if let value = table["refresh_before"] {
                guard let seconds = value.int.map(Double.init) ?? value.string.flatMap(DurationText.seconds), seconds > 0 else {
                    throw fail("refresh_before", table: tableName, "must be a duration like \"5m\", \"90s\" or a number of seconds")
                }
                refreshBefore = seconds
            }
            var account = AccountConfiguration(name: name, provider: AnyProviderSettings(accountProvider), refreshBefore: refreshBefore)
            /// An array of host claims, each one `valid`; empty when the key is absent.
            func claims(_ key: String, valid: (String) -> Bool, like examples: String) throws(ConfigurationError) -> [String] {
                guard let value = table[key] else { return [] }
                let strings = value.array?.compactMap(\.string) ?? []
                guard let array = value.array, strings.count == array.count, strings.allSatisfy(valid) else {
                    throw fail(key, table: tableName, "must be an array of \(examples)")
                }
                return strings
            }
            account.gitHosts = try claims("git_hosts", valid: { GitHostClaim($0) != nil }, like: "hosts like \"git.example.com\" or \"github.com/my-org\"")
            account.gitUsername = try string("git_username", required: false)
            account.registryHosts = try claims(
                "registry_hosts", valid: { RegistryHostClaim($0) != nil }, like: "registries like \"registry.example.com\" or \"127.0.0.1:5000\"")
            account.registryUsername = try string("registry_username", required: false)
            if account.registryUsername == "<token>" {
                // Docker's credential helpers treat the user name <token> as "Secret is an
                // identity token", which a registry exchanges for a token: not what tokend hands out.
                throw fail("registry_username", table: tableName, "cannot be <token>: that name marks an identity token to exchange, not a token to use; leave it out for oauth2accesstoken")
            }
            if let value = table["sink"] {
                account.tokenFiles = try tokenFiles(value, account: account, environment: environment) { fail("sink", table: tableName, $0) }
            }
            if let value = table["store"] { configuration.stores.accountStores[name] = try store(value) { fail("store", table: tableName, $0) } }
            account.fleet = try accountJoinsFleet(table) { fail("fleet", table: tableName, $0) }
            if account.fleet, configuration.fleet == nil { throw fail("fleet", table: tableName, "needs a [fleet] table: the etcd cluster the account is shared through") }
            configuration.accounts[name] = account
        }
        var claimed: [String: String] = [:]
        for (name, account) in configuration.accounts.sorted(by: { $0.key < $1.key }) {
            for file in account.tokenFiles {
                if let other = claimed.updateValue(name, forKey: file.path) {
                    throw fail("sink", table: "account.\(name)", "\(file.path) is already the token file of account \(other); give each its own path")
                }
            }
        }
        return try withConsumers(configuration)
    }
}

extension Configuration {
    static let tokenFileKeys: Set<String> = ["path", "kind", "min_valid"]

    /// `sink = { path = "…", kind = "id", min_valid = "5m" }`, or an array of them.
    static func tokenFiles(
        _ value: TOMLValueConvertible, account: AccountConfiguration, environment: [String: String], fail: (String) -> ConfigurationError
    ) throws(ConfigurationError) -> [TokenFile] {
        let shape = "must be a table like { path = \"aws-token\", kind = \"id\", min_valid = \"5m\" }, or an array of them"
        let tables: [TOMLTable]
        if let table = value.table {
            tables = [table]
        } else if let array = value.array, !array.isEmpty, array.allSatisfy({ $0.table != nil }) {
            tables = array.compactMap(\.table)
        } else {
            throw fail(shape)
        }
        guard let directory = TokenFileDirectory.path(environment: environment) else {
            throw fail("needs XDG_RUNTIME_DIR, the token files' directory is $XDG_RUNTIME_DIR/tokend/sinks (a login session sets it)")
        }
        var files: [TokenFile] = []
        for table in tables {
            if let key = table.keys.sorted().first(where: { !tokenFileKeys.contains($0) }) {
                throw fail("unknown key \(key) (known: kind, min_valid, path)")
            }
            var kind: TokenKind?
            if let text = table["kind"]?.string {
                guard let parsed = TokenKind(rawValue: text) else { throw fail("kind must be \"id\" or \"access\", not \"\(text)\"") }
                kind = parsed
            } else if table["kind"] != nil {
                throw fail("kind must be \"id\" or \"access\"")
            }
            var minValid = TokenFile.defaultMinValid
            if let raw = table["min_valid"] {
                guard let seconds = raw.int.map(Double.init) ?? raw.string.flatMap(DurationText.seconds), TokenFile.minValidRange.contains(seconds) else {
                    throw fail("min_valid must be a duration from 1s to 12h, like \"5m\" or \"90s\"")
                }
                minValid = seconds
            }
            if let raw = table["path"], raw.string == nil { throw fail("path must be a string: a file name in \(directory)") }
            let text = table["path"]?.string ?? "\(account.name).\((kind ?? account.defaultTokenKind).rawValue)"
            switch TokenFile.resolve(text, in: directory) {
            case .success(let path):
                guard !files.contains(where: { $0.path == path }) else { throw fail("\(path) is named twice") }
                files.append(TokenFile(path: path, kind: kind, minValid: minValid))
            case .failure(.outsideDirectory):
                throw fail("path \(text) is outside \(directory), the one directory token files may live in; name a file there (path = \"aws-token\") and link to it from where a client looks")
            case .failure(.badName):
                throw fail("path \"\(text)\" must be a file name (no \"/\", not starting with \".\") in \(directory)")
            }
        }
        return files
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

extension Configuration {
    /// A TOML value as providers see it.
    static func providerValue(_ value: any TOMLValueConvertible) -> ProviderConfigValue {
        if let string = value.string { return .string(string) }
        if let int = value.int { return .integer(int) }
        if let bool = value.bool { return .boolean(bool) }
        if let array = value.array {
            let strings = array.compactMap(\.string)
            return strings.count == array.count ? .strings(strings) : .other
        }
        if let table = value.table {
            var values: [String: ProviderConfigValue] = [:]
            for key in table.keys { values[key] = table[key].map(providerValue) ?? .other }
            return .table(values)
        }
        return .other
    }
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

    /// The line of `path`, a table (`account.w.idp."x"`) or a key in one
    /// (`account.w.idp."x".client_id`); nil when neither is written out.
    func line(ofPath path: String) -> Int? {
        if let line = line(ofTable: path) { return line }
        // The last dot outside quotes parts the table from the key.
        var inQuotes = false
        var split: String.Index?
        for index in path.indices {
            if path[index] == "\"" { inQuotes.toggle() } else if path[index] == ".", !inQuotes { split = index }
        }
        guard let split else { return nil }
        let table = String(path[..<split]), key = String(path[path.index(after: split)...]).trimmingQuotes
        guard self.line(ofTable: table) != nil else { return nil }
        return line(of: key, inTable: table)
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
