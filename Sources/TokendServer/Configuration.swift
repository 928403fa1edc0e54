import TokendCore

/// The daemon's configuration (DESIGN.md §2): accounts and their providers. No secrets, except an
/// OAuth `client_secret` where a provider requires one (it identifies the program, not the user).
public struct Configuration: Sendable, Equatable {
    public var accounts: [String: AccountConfiguration]
    /// Where it was read from, for messages.
    public var path: String
    /// `[hooks]`: an event name (`needs_login`, `refreshed`, …) to the argv run on it.
    public var hooks: [String: [String]] = [:]
    /// Top-level `notify`: the desktop notification on `needs_login` (on unless `false`).
    public var notify = true

    public init(accounts: [String: AccountConfiguration] = [:], path: String = "") {
        self.accounts = accounts
        self.path = path
    }
}

public struct AccountConfiguration: Sendable, Equatable {
    public enum Provider: Sendable, Equatable {
        /// `emulator` from the config, else `FIREBASE_AUTH_EMULATOR_HOST` at load time, else nil.
        case firebase(apiKey: String, emulatorHost: String?)
        case oidc(issuer: String, clientID: String, clientSecret: String?, scopes: [String])
    }

    public var name: String
    public var provider: Provider
    public var refreshBefore: Double
    /// `git_hosts`: the hosts (and path prefixes) `tokenctl git-credential` answers for with
    /// this account, as written; each parses as a `GitHostClaim`.
    public var gitHosts: [String] = []
    /// `git_username`: the user name git is given; nil lets tokenctl choose (email claim or `oauth2`).
    public var gitUsername: String? = nil
    /// Firebase: the Google OAuth client for `tokenctl login --google` (`google_client_id`,
    /// `google_client_secret`); nil when Google sign-in is not set up.
    public var google: GoogleClient? = nil

    public var kind: ProviderKind {
        switch provider {
        case .firebase: .firebase
        case .oidc: .oidc
        }
    }

    public var policy: RefreshPolicy { RefreshPolicy(refreshBefore: refreshBefore) }
}

/// An OAuth client Google issued for an app. The secret of an installed-app client identifies
/// the program, not the user: Google documents it as not confidential.
public struct GoogleClient: Sendable, Equatable {
    public var clientID: String
    public var clientSecret: String?

    public init(clientID: String, clientSecret: String?) {
        self.clientID = clientID
        self.clientSecret = clientSecret
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
