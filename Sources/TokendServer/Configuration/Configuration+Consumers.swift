import TOMLKit
import TokendCore
import TokendProtocol

// `[consumer.NAME]` and `[[consumer.NAME.upstream]]` (README, "Consumers"): read into
// `ConsumerPolicy` values, every bad value an error with its line, as the rest of the file.

extension Configuration {
    static let consumerKeys: Set<String> = ["socket", "accounts", "kinds", "audiences", "scopes", "max_min_valid", "operations", "unit", "proxy", "upstream"]
    static let upstreamKeys: Set<String> = ["url", "ca", "account", "kind", "audience", "scopes"]
    /// The ops a consumer may be given by name (`hello` is always allowed).
    static let consumerOperations: [Op] = Op.allCases.filter { $0 != .hello }
    /// Consumers, and upstreams per consumer: far beyond any real setup, small enough that a file
    /// cannot make the daemon open thousands of sockets.
    static let maximumConsumers = 64
    static let maximumUpstreams = 64
    /// A unit name as systemd allows it (systemd.unit(5): at most 255 characters).
    static let maximumUnitLength = 255
    static let unitCharacters = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789:_.\\@-")
    /// The smallest `max_min_valid`: a plain `token` request asks for a minute (`TokenArgs.defaultMinValid`),
    /// and a ceiling below it would refuse every one.
    static let smallestMaxMinValid = TokenArgs.defaultMinValid

    /// Every `[consumer.NAME]` of `root`, checked against the accounts already read.
    static func consumers(
        _ root: TOMLTable, accounts: [String: AccountConfiguration], locator: KeyLocator, path: String, environment: [String: String]
    ) throws(ConfigurationError) -> [String: ConsumerPolicy] {
        guard let value = root["consumer"] else { return [:] }
        func fail(_ key: String, table: String?, _ message: String) -> ConfigurationError {
            ConfigurationError(path: path, line: locator.line(of: key, inTable: table), key: table.map { "\($0).\(key)" } ?? key, message: message)
        }
        guard let tables = value.table else { throw fail("consumer", table: nil, "must be a table of consumers: [consumer.NAME]") }
        guard tables.keys.count <= maximumConsumers else { throw fail("consumer", table: nil, "at most \(maximumConsumers) consumers") }
        var consumers: [String: ConsumerPolicy] = [:]
        var sockets: [String: String] = [:]
        for name in tables.keys.sorted() {
            let tableName = "consumer.\(name)"
            guard !name.isEmpty, name.count <= maximumAccountNameLength, name.allSatisfy(accountNameCharacters.contains) else {
                throw ConfigurationError(path: path, line: locator.line(ofTable: tableName), key: tableName,
                    message: "consumer names use letters, digits, '.', '_' and '-' (at most \(maximumAccountNameLength))")
            }
            guard let table = tables[name]?.table else { throw fail(name, table: "consumer", "must be a table") }
            let reader = ConsumerTableReader(table: table, name: tableName, fail: { key, message in fail(key, table: tableName, message) })
            let consumer = try reader.policy(name: name, accounts: accounts, environment: environment, upstreamFail: { index, key, message in
                ConfigurationError(path: path, line: locator.line(ofUpstream: index, key: key, consumer: tableName) ?? locator.line(ofTable: tableName),
                    key: "\(tableName).upstream[\(index + 1)]" + (key.map { ".\($0)" } ?? ""), message: message)
            })
            if let socket = consumer.socket, let other = sockets.updateValue(name, forKey: socket) {
                throw fail("socket", table: tableName, "\(socket) is already the socket of consumer \(other); give each its own")
            }
            consumers[name] = consumer
        }
        return consumers
    }

    /// A consumer's `socket`: an absolute path, or a file name in `$XDG_RUNTIME_DIR/tokend/consumers/`,
    /// where no other user can reach it and where the systemd unit lets tokend create it.
    static func consumerSocketPath(_ text: String, environment: [String: String]) -> Result<String, ConsumerSocketProblem> {
        let path: String
        if text.hasPrefix("/") {
            path = text
        } else {
            guard !text.isEmpty, !text.contains("/"), !text.hasPrefix(".") else { return .failure(.badName) }
            guard let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") else { return .failure(.noRuntimeDirectory) }
            path = runtime + "/tokend/consumers/" + text
        }
        guard !path.split(separator: "/").contains(".."), !path.hasSuffix("/") else { return .failure(.badName) }
        guard path.utf8.count <= SocketPath.maximumLength else { return .failure(.tooLong(path)) }
        return .success(path)
    }

    /// One scope name as OAuth writes it (RFC 6749 §3.3, `TokenScope`'s rule), no spaces.
    static func isScopeName(_ text: String) -> Bool {
        guard !text.isEmpty, !text.contains(" ") else { return false }
        let parsed = try? TokenScope(scope: text, audience: nil)
        return parsed != nil
    }

    /// One audience as a token request carries it (`TokenScope`'s rule).
    static func isAudience(_ text: String) -> Bool {
        let parsed = try? TokenScope(scope: nil, audience: text)
        return parsed != nil
    }

    enum ConsumerSocketProblem: Error {
        case badName, noRuntimeDirectory, tooLong(String)
    }
}

/// Reads one `[consumer.NAME]` table; every failure names its key.
struct ConsumerTableReader {
    let table: TOMLTable
    let name: String
    let fail: (String, String) -> ConfigurationError

    func policy(
        name consumerName: String, accounts configured: [String: AccountConfiguration], environment: [String: String],
        upstreamFail: (Int, String?, String) -> ConfigurationError
    ) throws(ConfigurationError) -> ConsumerPolicy {
        for key in table.keys.sorted() where !Configuration.consumerKeys.contains(key) {
            throw fail(key, "unknown key for a consumer (known: \(Configuration.consumerKeys.sorted().joined(separator: ", ")))")
        }
        guard let names = try strings("accounts", like: "account names like [\"work\"]"), !names.isEmpty else {
            throw fail("accounts", "is required: the accounts this consumer may use, like accounts = [\"work\"]")
        }
        for account in names where configured[account] == nil {
            throw fail("accounts", "\"\(account)\" is not an account of this file (no [account.\(account)])")
        }
        var policy = ConsumerPolicy(name: consumerName, accounts: Array(Set(names)))
        if let value = table["socket"] {
            guard let text = value.string else { throw fail("socket", "must be a string: an absolute path, or a file name in $XDG_RUNTIME_DIR/tokend/consumers") }
            switch Configuration.consumerSocketPath(text, environment: environment) {
            case .success(let path): policy.socket = path
            case .failure(.badName): throw fail("socket", "must be an absolute path without \"..\", or a file name (no \"/\", not starting with \".\") in $XDG_RUNTIME_DIR/tokend/consumers")
            case .failure(.noRuntimeDirectory): throw fail("socket", "a file name needs XDG_RUNTIME_DIR (a login session sets it); give an absolute path instead")
            case .failure(.tooLong(let path)): throw fail("socket", "\(path) is longer than \(SocketPath.maximumLength) bytes, which Unix sockets cannot bind; choose a shorter path")
            }
        }
        if let kinds = try strings("kinds", like: "token kinds: [\"id\"], [\"access\"] or both") {
            var parsed: Set<TokenKind> = []
            for kind in kinds {
                guard let value = TokenKind(rawValue: kind) else { throw fail("kinds", "must hold \"id\" and/or \"access\", not \"\(kind)\"") }
                parsed.insert(value)
            }
            guard !parsed.isEmpty else { throw fail("kinds", "must name at least one kind: \"id\" and/or \"access\"") }
            policy.kinds = parsed
        }
        policy.audiences = try narrowing("audiences", like: "audiences like [\"https://api.example.com\"]", valid: Configuration.isAudience)
        policy.scopes = try narrowing("scopes", like: "scope names like [\"read:repo\"]", valid: Configuration.isScopeName)
        if let value = table["max_min_valid"] {
            let bound = RequestField.minValid.bound ?? 0...86_400
            guard let seconds = value.int.flatMap({ (0...86_400).contains($0) ? Double($0) : nil }) ?? value.string.flatMap(DurationText.seconds),
                  seconds >= Configuration.smallestMaxMinValid, seconds <= bound.upperBound else {
                throw fail("max_min_valid", "must be a duration from 60s to 24h, like \"5m\" (a plain token request asks for 60 s)")
            }
            policy.maxMinValid = seconds
        }
        if let operations = try strings("operations", like: "ops like [\"token\", \"status\"]") {
            var parsed: Set<Op> = []
            for operation in operations {
                guard let op = Op(rawValue: operation), op != .hello else {
                    throw fail("operations", "\"\(operation)\" is not an operation; known: \(Configuration.consumerOperations.map(\.rawValue).joined(separator: ", "))")
                }
                parsed.insert(op)
            }
            if parsed.contains(.status) || parsed.contains(.list) { parsed.formUnion([.status, .list]) }
            policy.operations = parsed
        }
        if let value = table["unit"] {
            guard let unit = value.string, !unit.isEmpty, unit.count <= Configuration.maximumUnitLength, unit.allSatisfy(Configuration.unitCharacters.contains),
                  unit.contains("."), !unit.hasPrefix("."), !unit.hasSuffix(".") else {
                throw fail("unit", "must be a systemd unit name like \"app-build.scope\" or \"build.service\"")
            }
            policy.unit = unit
        }
        if let value = table["proxy"] {
            guard let text = value.string, let address = ProxyAddress(parsing: text) else {
                throw fail("proxy", "must be a loopback address and port like \"127.0.0.1:8080\" or \"[::1]:8080\", or an absolute Unix socket path")
            }
            policy.proxy = text
            policy.proxyAddress = address
        }
        guard policy.socket != nil || policy.proxy != nil else {
            throw fail("accounts", "a consumer needs a socket = \"…\" or a proxy = \"…\" to be reached through")
        }
        policy.upstreams = try upstreams(of: policy, fail: upstreamFail)
        if policy.proxy != nil, policy.upstreams.isEmpty {
            throw fail("proxy", "needs at least one [[\(name).upstream]] with the url, account and kind it adds a token for")
        }
        return policy
    }

    /// An array of strings; nil when the key is absent.
    func strings(_ key: String, like examples: String) throws(ConfigurationError) -> [String]? {
        guard let value = table[key] else { return nil }
        let strings = value.array?.compactMap(\.string) ?? []
        guard let array = value.array, strings.count == array.count else { throw fail(key, "must be an array of \(examples)") }
        return strings
    }

    /// `audiences` or `scopes`: a non-empty array, each entry `valid`; nil when absent.
    func narrowing(_ key: String, like examples: String, valid: (String) -> Bool) throws(ConfigurationError) -> [String]? {
        guard let values = try strings(key, like: examples) else { return nil }
        guard !values.isEmpty else { throw fail(key, "must name at least one; leave the key out to set no rule") }
        for value in values where !valid(value) {
            throw fail(key, "\"\(value.prefix(64))\" is not one of \(examples)")
        }
        return Array(Set(values)).sorted()
    }

    func upstreams(of policy: ConsumerPolicy, fail: (Int, String?, String) -> ConfigurationError) throws(ConfigurationError) -> [ConsumerUpstream] {
        guard let value = table["upstream"] else { return [] }
        guard let array = value.array, array.allSatisfy({ $0.table != nil }) else {
            throw fail(0, nil, "must be [[\(name).upstream]] tables with url, account and kind")
        }
        guard policy.proxy != nil else { throw fail(0, nil, "an upstream needs the consumer's proxy = \"127.0.0.1:PORT\" to be reached through") }
        guard array.count <= Configuration.maximumUpstreams else { throw fail(0, nil, "at most \(Configuration.maximumUpstreams) upstreams per consumer") }
        var upstreams: [ConsumerUpstream] = []
        for (index, entry) in array.compactMap(\.table).enumerated() {
            func failHere(_ key: String?, _ message: String) -> ConfigurationError { fail(index, key, message) }
            for key in entry.keys.sorted() where !Configuration.upstreamKeys.contains(key) {
                throw failHere(key, "unknown key for an upstream (known: \(Configuration.upstreamKeys.sorted().joined(separator: ", ")))")
            }
            guard let url = entry["url"]?.string else { throw failHere("url", "is required: the origin tokend connects to, like \"https://api.example.com\"") }
            guard let origin = UpstreamOrigin(parsing: url) else {
                throw failHere("url", "must be an origin like \"https://api.example.com\" or \"https://api.example.com:8443\": a scheme, a host, an optional port, no path, user or query")
            }
            guard origin.scheme == "https" || LoopbackHost.contains(Substring(origin.host)) else {
                // The git helper's rule: a token never crosses the network in plain text.
                throw failHere("url", "plain http carries the token in the clear: only a loopback host (127.0.0.1, ::1, localhost) may be http; use https://\(origin.host)")
            }
            guard !upstreams.contains(where: { $0.scheme == origin.scheme && $0.host == origin.host && $0.port == origin.port }) else {
                throw failHere("url", "\(url) is named by an earlier upstream of this consumer; give each origin one entry")
            }
            guard let account = entry["account"]?.string, !account.isEmpty else { throw failHere("account", "is required: one of this consumer's accounts") }
            guard policy.accounts.contains(account) else {
                throw failHere("account", "\"\(account)\" is not in this consumer's accounts (\(policy.accounts.joined(separator: ", "))); add it there first")
            }
            var upstream = ConsumerUpstream(url: url, scheme: origin.scheme, host: origin.host, port: origin.port, account: account)
            if let value = entry["ca"] {
                guard let ca = value.string, ca.hasPrefix("/"), !ca.split(separator: "/").contains("..") else {
                    throw failHere("ca", "must be the absolute path of a PEM file of the roots to trust; leave it out for the system's store")
                }
                upstream.ca = ca
            }
            if let value = entry["kind"] {
                guard let text = value.string, let kind = TokenKind(rawValue: text) else { throw failHere("kind", "must be \"id\" or \"access\"") }
                guard policy.kinds?.contains(kind) != false else { throw failHere("kind", "\"\(text)\" is not in this consumer's kinds") }
                upstream.kind = kind
            }
            if let value = entry["audience"] {
                guard let audience = value.string, Configuration.isAudience(audience) else {
                    throw failHere("audience", "must be one URI or name, without spaces")
                }
                guard policy.audiences?.contains(audience) != false else { throw failHere("audience", "\"\(audience)\" is not in this consumer's audiences") }
                upstream.audience = audience
            } else if policy.audiences != nil {
                throw failHere("audience", "is required: this consumer may use only its audiences (\(policy.audiences!.joined(separator: ", ")))")
            }
            if let value = entry["scopes"] {
                let scopes = value.array?.compactMap(\.string) ?? []
                guard let array = value.array, !scopes.isEmpty, scopes.count == array.count,
                      scopes.allSatisfy(Configuration.isScopeName) else {
                    throw failHere("scopes", "must be a non-empty array of scope names like [\"read:repo\"]")
                }
                if let allowed = policy.scopes, let outside = scopes.first(where: { !allowed.contains($0) }) {
                    throw failHere("scopes", "\"\(outside)\" is not in this consumer's scopes")
                }
                upstream.scopes = scopes
            } else if policy.scopes != nil {
                throw failHere("scopes", "is required: this consumer may use only its scopes (\(policy.scopes!.joined(separator: ", ")))")
            }
            upstreams.append(upstream)
        }
        return upstreams
    }
}

/// An upstream's `url`: scheme, host and port, nothing else (no user, path, query or fragment).
struct UpstreamOrigin: Equatable {
    var scheme: String
    var host: String
    var port: Int

    init?(parsing url: String) {
        let lowered = url.lowercased()
        let scheme: String
        if lowered.hasPrefix("https://") { scheme = "https" } else if lowered.hasPrefix("http://") { scheme = "http" } else { return nil }
        var authority = Substring(lowered.dropFirst(scheme.count + 3))
        if authority.hasSuffix("/") { authority = authority.dropLast() }
        guard let split = HostAndPort.split(authority) else { return nil }
        self.scheme = scheme
        self.host = split.host
        self.port = split.port ?? (scheme == "https" ? 443 : 80)
    }
}

/// `host[:port]` or `[v6]:port`, as URLs and listen addresses write them.
enum HostAndPort {
    /// Longest host name (RFC 1035: 253 characters).
    static let maximumHostLength = 253

    static func split(_ authority: Substring) -> (host: String, port: Int?)? {
        guard !authority.isEmpty, authority.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || ".-:[]".contains($0)) }) else { return nil }
        var host: Substring
        var portText: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return nil }
            host = authority[authority.index(after: authority.startIndex)..<close]
            let rest = authority[authority.index(after: close)...]
            if !rest.isEmpty {
                guard rest.hasPrefix(":") else { return nil }
                portText = rest.dropFirst()
            }
            guard host.contains(":"), host.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }) else { return nil }
        } else {
            let parts = authority.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count <= 2 else { return nil }
            host = parts[0]
            portText = parts.count == 2 ? parts[1] : nil
            guard host.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "." || $0 == "-" }), !host.hasPrefix("-"), !host.hasPrefix(".") else { return nil }
        }
        guard !host.isEmpty, host.count <= maximumHostLength else { return nil }
        guard let portText else { return (String(host), nil) }
        // Bounded before conversion: at most five digits, then the range.
        guard !portText.isEmpty, portText.count <= 5, portText.allSatisfy(\.isNumber), let port = Int(portText), (1...65_535).contains(port) else { return nil }  // conversion: five ASCII digits
        return (String(host), port)
    }
}

extension ProxyAddress {
    /// `"127.0.0.1:8080"`, `"[::1]:8080"`, `"localhost:8080"`, or an absolute socket path.
    init?(parsing text: String) {
        if text.hasPrefix("/") {
            guard text.utf8.count <= SocketPath.maximumLength, !text.split(separator: "/").contains(".."), !text.hasSuffix("/") else { return nil }
            self = .unix(path: text)
            return
        }
        guard let split = HostAndPort.split(Substring(text.lowercased())), let port = split.port, LoopbackHost.contains(Substring(split.host)) else { return nil }
        self = .tcp(host: split.host, port: port)
    }
}

extension KeyLocator {
    /// The line of `key` in the `index`th `[[CONSUMER.upstream]]` (0-based), or of that header when
    /// the key is nil or not written out; nil when the entries are not written as headers.
    func line(ofUpstream index: Int, key: String?, consumer: String) -> Int? {
        let header = "[[\(consumer).upstream]]"
        let headers = lines.indices.filter { lines[$0].trimmed.replacingSpaces == header }
        guard index < headers.count else { return nil }
        let start = headers[index]
        guard let key else { return start + 1 }
        var number = start + 1
        while number < lines.count, !lines[number].trimmed.hasPrefix("[") {
            if lines[number].split(separator: "=", maxSplits: 1).first?.trimmed == key { return number + 1 }
            number += 1
        }
        return start + 1
    }
}

extension String {
    fileprivate var replacingSpaces: String { String(filter { $0 != " " && $0 != "\t" }) }
}
