import TOMLKit
import TokendCore
import TokendKeyring

extension Configuration {
    /// The top-level keys that say where sessions are kept (README, "Stores").
    static let storeKeys: Set<String> = ["store", "pass_prefix", "tpm2_tcti"]
    /// A TCTI string is a library name and its options; 1 KiB is far beyond any real one.
    static let maximumTCTILength = 1024

    /// `store`, `pass_prefix` and `tpm2_tcti` at the top level (each account's `store` is read
    /// with its table).
    static func storeSettings(_ root: TOMLTable, fail: (String, String?, String) -> ConfigurationError) throws(ConfigurationError) -> StoreSettings {
        var settings = StoreSettings()
        if let value = root["store"] { settings.defaultStore = try store(value) { fail("store", nil, $0) } }
        if let value = root["pass_prefix"] {
            // A folder inside the password store: pass itself refuses `..`, and a leading / is not
            // inside it.
            guard let prefix = value.string, !prefix.hasPrefix("/"), !prefix.split(separator: "/").contains(".."),
                  prefix.allSatisfy({ accountNameCharacters.contains($0) || $0 == "/" }) else {
                throw fail("pass_prefix", nil, "must be a folder inside the password store, like \"tokend/\" (letters, digits, '.', '_', '-', '/'; no ..)")
            }
            settings.passPrefix = prefix
        }
        if let value = root["tpm2_tcti"] {
            guard let tcti = value.string, !tcti.trimmed.isEmpty, tcti.count <= maximumTCTILength, !tcti.contains(where: { $0.isNewline }) else {
                throw fail("tpm2_tcti", nil, "must be a TCTI string like \"device:/dev/tpmrm0\" or \"swtpm:host=127.0.0.1,port=2321\"")
            }
            settings.tpm2TCTI = tcti.trimmed
        }
        return settings
    }

    static func store(_ value: TOMLValueConvertible, fail: (String) -> ConfigurationError) throws(ConfigurationError) -> StoreKind {
        guard let text = value.string, let kind = StoreKind(rawValue: text) else {
            throw fail("must be one of \(StoreKind.quotedNames)")
        }
        return kind
    }
}
