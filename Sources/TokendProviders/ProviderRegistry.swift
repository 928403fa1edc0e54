import TokendCore

/// A value from an account's configuration table, as a provider sees it: the TOML reader lives
/// in the server, and providers only validate what it read.
public enum ProviderConfigValue: Sendable, Equatable {
    case string(String)
    case integer(Int)
    case boolean(Bool)
    case strings([String])
    /// A table of values (`[account.NAME.idp."microsoft.com"]`).
    case table([String: ProviderConfigValue])
    /// Anything else (a date, a mixed array): always an error for the keys we know.
    case other
}

/// A provider's complaint about its configuration, naming the key when it is one key's fault.
public struct ProviderConfigError: Error, Sendable, Equatable {
    public var key: String?
    public var message: String

    public init(key: String?, _ message: String) {
        self.key = key
        self.message = message
    }
}

/// One account's validated provider settings. The provider's own type; the server compares,
/// stores and hands them back without knowing what is inside.
public protocol ProviderSettings: Sendable, CustomStringConvertible {
    var descriptor: ProviderDescriptor { get }
    /// What `tokenctl token` gives when no `--kind` is asked for (an OIDC account may choose).
    var defaultTokenKind: TokenKind { get }
    /// Who issues the account's sessions: provider, project or issuer and client, and the host
    /// refresh tokens go to. A stored session is only ever sent back to the endpoint it came from.
    var endpoint: String { get }
    func makeProvider(transport: HTTPTransport) -> any TokenProvider
    func isEqual(to other: any ProviderSettings) -> Bool
}

extension ProviderSettings {
    public var defaultTokenKind: TokenKind { descriptor.defaultTokenKind }
}

extension ProviderSettings where Self: Equatable {
    public func isEqual(to other: any ProviderSettings) -> Bool { (other as? Self) == self }
}

/// Settings of any provider, compared by value: a changed account gets a new provider.
public struct AnyProviderSettings: Sendable, Equatable, CustomStringConvertible {
    public let base: any ProviderSettings

    public init(_ base: any ProviderSettings) {
        self.base = base
    }

    public var kind: ProviderKind { base.descriptor.kind }
    public var description: String { base.description }

    public static func == (lhs: AnyProviderSettings, rhs: AnyProviderSettings) -> Bool { lhs.base.isEqual(to: rhs.base) }
}

/// Everything the rest of the daemon knows about one kind of provider. Adding a provider is a
/// new descriptor in `ProviderRegistry.standard`, its settings type and its `TokenProvider`.
public struct ProviderDescriptor: Sendable {
    /// What the engine asks of a kind of provider before it offers a feature.
    public enum Capability: String, Sendable, CaseIterable {
        /// Mints access tokens narrowed to a scope and an audience (`token` with `scope`/`audience`).
        case scopedTokens
    }

    /// The `provider = "…"` value.
    public var kind: ProviderKind
    /// The provider's own keys in an account table (the common ones, `provider`, `refresh_before`
    /// and the like, belong to the server).
    public var keys: Set<String>
    public var defaultTokenKind: TokenKind
    public var capabilities: Set<Capability>
    /// The `login` methods its accounts offer; the engine refuses any other before the flow runs.
    public var loginMethods: [LoginRequest.Method]
    /// Validates an account table (common keys removed) into settings; `environment` for
    /// variables such as `FIREBASE_AUTH_EMULATOR_HOST`.
    public var parse: @Sendable ([String: ProviderConfigValue], [String: String]) throws(ProviderConfigError) -> any ProviderSettings
    /// How the provider's token endpoint answers map to refresh outcomes.
    public var classify: @Sendable (HTTPAnswer) -> RefreshOutcome
}

/// The providers this build knows, by name.
public struct ProviderRegistry: Sendable {
    public let descriptors: [ProviderDescriptor]

    public init(_ descriptors: [ProviderDescriptor]) {
        self.descriptors = descriptors
    }

    public static let standard = ProviderRegistry([FirebaseProvider.descriptor, OIDCProvider.descriptor])

    public func descriptor(named name: String) -> ProviderDescriptor? {
        descriptors.first { $0.kind.rawValue == name }
    }

    public var names: [String] { descriptors.map(\.kind.rawValue) }
}

/// Small readers for `ProviderDescriptor.parse` implementations: one error text per mistake.
public struct ProviderConfigReader: Sendable {
    public let values: [String: ProviderConfigValue]

    public init(_ values: [String: ProviderConfigValue]) {
        self.values = values
    }

    public func string(_ key: String, required: Bool = false) throws(ProviderConfigError) -> String? {
        guard let value = values[key] else {
            if required { throw ProviderConfigError(key: key, "is required") }
            return nil
        }
        guard case .string(let text) = value, !text.trimmed.isEmpty else { throw ProviderConfigError(key: key, "must be a non-empty string") }
        return text.trimmed
    }

    public func strings(_ key: String) throws(ProviderConfigError) -> [String]? {
        guard let value = values[key] else { return nil }
        guard case .strings(let list) = value else { throw ProviderConfigError(key: key, "must be an array of strings") }
        return list
    }

    public func choice<T: RawRepresentable>(_ key: String, _ type: T.Type) throws(ProviderConfigError) -> T? where T.RawValue == String {
        guard let text = try string(key) else { return nil }
        guard let chosen = T(rawValue: text) else { throw ProviderConfigError(key: key, "\"\(text)\" is not one of the accepted values") }
        return chosen
    }

    /// A table whose every value is a table (`idp."ID"`), by name; empty when absent.
    public func tables(_ key: String) throws(ProviderConfigError) -> [String: [String: ProviderConfigValue]] {
        guard let value = values[key] else { return [:] }
        guard case .table(let outer) = value else { throw ProviderConfigError(key: key, "must be a table of tables, one per provider, like \(key).\"github.com\"") }
        var tables: [String: [String: ProviderConfigValue]] = [:]
        for (name, inner) in outer {
            guard case .table(let table) = inner else { throw ProviderConfigError(key: "\(key).\(name)", "must be a table, like \(key).\"github.com\"") }
            tables[name] = table
        }
        return tables
    }

    /// The account's `allow_plain_http` (the server hands it to every provider).
    public var allowsPlainHTTP: Bool { values[PlainHTTP.optInKey] == .boolean(true) }

    /// An endpoint URL: https, or plain http only to a loopback host (a local test server or
    /// emulator) unless the account opts in, since anything else sends secrets in the clear.
    public func url(_ key: String, required: Bool = false) throws(ProviderConfigError) -> String? {
        guard let text = try string(key, required: required) else { return nil }
        guard PlainHTTP.isAcceptableURL(text, allowPlainHTTP: allowsPlainHTTP) else {
            throw ProviderConfigError(key: key, "must be an https:// URL (plain http only on loopback, or with \(PlainHTTP.optInKey) = true)")
        }
        return text
    }
}
