// Configuration/ — config.toml: reading it safely (owner and mode checks, size cap), parsing the
// TOML into `Configuration` and each account's endpoint binding. Pure apart from the one read
// in ConfigurationFile.swift; the engine applies what it produces.

import TokendCore
import TokendFleet
import TokendKeyring
import TokendProviders

/// The daemon's configuration (README.md, "Configuration"): accounts and their providers. No secrets, except an
/// OAuth `client_secret` where a provider requires one (it identifies the program, not the user).
public struct Configuration: Sendable, Equatable {
    public var accounts: [String: AccountConfiguration]
    /// Where it was read from, for messages.
    public var path: String
    /// `[hooks]`: an event name (`needs_login`, `refreshed`, …) to the argv run on it.
    public var hooks: [String: [String]] = [:]
    /// Top-level `notify`: the desktop notification on `needs_login` (on unless `false`).
    public var notify = true
    /// `store`, `pass_prefix`, `tpm2_tcti` and each account's `store`: where sessions are kept.
    public var stores = StoreSettings()
    /// `[fleet]`: the etcd cluster accounts with `fleet = true` are shared through (README, "A fleet").
    public var fleet: FleetSettings?
    /// `[consumer.NAME]`: the clients with fewer rights, their sockets and proxies (ConsumerPolicy).
    public var consumers: [String: ConsumerPolicy] = [:]
    /// Things worth a line in the log that do not stop the configuration from loading.
    public var warnings: [String] = []

    public init(accounts: [String: AccountConfiguration] = [:], path: String = "") {
        self.accounts = accounts
        self.path = path
    }
}

public struct AccountConfiguration: Sendable, Equatable {
    public var name: String
    /// The provider's own settings, validated by it (`ProviderRegistry`).
    public var provider: AnyProviderSettings
    public var refreshBefore: Double
    /// `git_hosts`: the hosts (and path prefixes) `tokenctl git-credential` answers for with
    /// this account, as written; each parses as a `GitHostClaim`.
    public var gitHosts: [String] = []
    /// `git_username`: the user name git is given; nil lets tokenctl choose (email claim or `oauth2`).
    public var gitUsername: String? = nil
    /// `registry_hosts`: the OCI registries (`host[:port]`) `docker-credential-tokend` answers
    /// for with this account; each parses as a `RegistryHostClaim`.
    public var registryHosts: [String] = []
    /// `registry_username`: the user name the registry is given; nil means `oauth2accesstoken`.
    public var registryUsername: String? = nil
    /// `sink`: the files kept holding the account's token (Sinks/).
    public var tokenFiles: [TokenFile] = []
    /// `fleet`: the session is shared with the other members of `[fleet]`, refreshed by one.
    public var fleet = false

    public init(name: String, provider: AnyProviderSettings, refreshBefore: Double) {
        self.name = name
        self.provider = provider
        self.refreshBefore = refreshBefore
    }

    public var kind: ProviderKind { provider.kind }
    public var defaultTokenKind: TokenKind { provider.base.defaultTokenKind }

    public var policy: RefreshPolicy {
        RefreshPolicy(refreshBefore: refreshBefore, fileMinValid: tokenFiles.map(\.minValid).max() ?? 0)
    }
}

/// A configuration problem, located: file, line where known, key.
public struct ConfigurationError: Error, Sendable, Equatable, CustomStringConvertible {
    public var path: String
    public var line: Int?
    public var key: String?
    public var message: String

    public var description: String {
        var location = path
        if let line { location += ":\(line)" }
        if let key { location += ": \(key)" }
        return "\(location): \(message)"
    }
}

/// Durations as people write them in config files: `90`, `90s`, `5m`, `1h`, `1h30m`.
public enum DurationText {
    public static func seconds(_ text: String) -> Double? {
        let trimmed = text.trimmed
        if let plain = Double(trimmed) { return plain >= 0 ? plain : nil }
        var total = 0.0
        var number = ""
        var sawUnit = false
        for character in trimmed {
            if character.isNumber || character == "." {
                number.append(character)
                continue
            }
            guard let value = Double(number) else { return nil }
            switch character {
            case "s": total += value
            case "m": total += value * 60
            case "h": total += value * 3600
            case "d": total += value * 86400
            default: return nil
            }
            number = ""
            sawUnit = true
        }
        return sawUnit && number.isEmpty ? total : nil
    }
}
