import TOMLKit
import TokendCore
import TokendFleet

extension Configuration {
    /// The `[fleet]` table's keys (README, "A fleet").
    static let fleetKeys: Set<String> = ["endpoints", "ca", "cert", "key", "user", "password_file", "prefix", "sealing_key", "lease"]
    /// A prefix is a folder of etcd's key space, as an etcd role names it (`--prefix=true`).
    static let fleetPrefixCharacters = accountNameCharacters.union("/")

    /// `[fleet]`: nil when absent. Paths are checked when the daemon reads them, not here.
    static func fleetSettings(_ root: TOMLTable, fail: (String, String?, String) -> ConfigurationError) throws(ConfigurationError) -> FleetSettings? {
        guard let value = root["fleet"] else { return nil }
        guard let table = value.table else { throw fail("fleet", nil, "must be a table: [fleet] with endpoints, ca, cert, key and sealing_key") }
        for key in table.keys.sorted() where !fleetKeys.contains(key) {
            throw fail(key, "fleet", "unknown key (known: \(fleetKeys.sorted().joined(separator: ", ")))")
        }
        func path(_ key: String, required: Bool) throws(ConfigurationError) -> String? {
            guard let raw = table[key] else {
                if required { throw fail(key, "fleet", "is required") }
                return nil
            }
            guard let text = raw.string, !text.trimmed.isEmpty, !text.contains(where: \.isNewline) else { throw fail(key, "fleet", "must be a file's path") }
            return text.trimmed
        }
        let urls = table["endpoints"]?.array?.compactMap(\.string) ?? []
        guard let array = table["endpoints"]?.array, !urls.isEmpty, urls.count == array.count,
              urls.allSatisfy({ $0.hasPrefix("https://") && $0.count > "https://".count && !$0.contains(where: { $0.isWhitespace }) }) else {
            throw fail("endpoints", "fleet", "must be a non-empty array of etcd client URLs like \"https://etcd1.example.com:2379\" (https only: sessions travel there)")
        }
        guard let ca = try path("ca", required: true), let cert = try path("cert", required: true), let key = try path("key", required: true),
              let sealingKey = try path("sealing_key", required: true) else { return nil }
        var settings = FleetSettings(endpoints: urls, ca: ca, cert: cert, key: key, sealingKey: sealingKey)
        if let raw = table["user"] {
            guard let user = raw.string, !user.trimmed.isEmpty, user.allSatisfy(accountNameCharacters.contains) else {
                throw fail("user", "fleet", "must be an etcd user name (letters, digits, '.', '_', '-')")
            }
            settings.user = user
        }
        settings.passwordFile = try path("password_file", required: false)
        guard (settings.user == nil) == (settings.passwordFile == nil) else {
            throw fail(settings.user == nil ? "password_file" : "user", "fleet", "user and password_file go together: etcd's gateway authenticates by name and password")
        }
        if let raw = table["prefix"] {
            guard let prefix = raw.string, prefix.hasPrefix("/"), prefix.hasSuffix("/"), prefix.count > 1, prefix.count <= 128,
                  prefix.allSatisfy(fleetPrefixCharacters.contains), !prefix.split(separator: "/").contains("..") else {
                throw fail("prefix", "fleet", "must be a key prefix like \"/tokend/\" (starts and ends with '/'; letters, digits, '.', '_', '-')")
            }
            settings.prefix = prefix
        }
        if let raw = table["lease"] {
            guard let seconds = raw.int.map(Double.init) ?? raw.string.flatMap(DurationText.seconds), FleetSettings.leaseRange.contains(seconds) else {
                throw fail("lease", "fleet", "must be a duration from 5s to 1h, like \"10s\"")
            }
            settings.lease = seconds
        }
        return settings
    }

    /// An account's `fleet`: whether it is shared through the `[fleet]` table's etcd.
    static func accountJoinsFleet(_ table: TOMLTable, fail: (String) -> ConfigurationError) throws(ConfigurationError) -> Bool {
        guard let raw = table["fleet"] else { return false }
        guard let flag = raw.bool else { throw fail("must be true or false") }
        return flag
    }
}
