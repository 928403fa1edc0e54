import Testing
import TokendKeyring
@testable import TokendServer

/// Issue 48's keys: `store` (top level and per account), `pass_prefix`, `tpm2_tcti`.
@Suite struct StoreConfigurationTests {
    func parse(_ text: String) throws(ConfigurationError) -> Configuration {
        try Configuration.parse(text, path: "/c.toml", environment: [:])
    }

    func account(_ name: String, _ extra: String = "") -> String {
        "[account.\(name)]\nprovider = \"firebase\"\napi_key = \"k\"\n\(extra)"
    }

    @Test func defaultsToTheSecretService() throws {
        let stores = try parse(account("work")).stores
        #expect(stores == StoreSettings())
        #expect(stores.store(of: "work") == .secretService)
        #expect(stores.storesInUse == [.secretService])
    }

    @Test func topLevelAndPerAccountStores() throws {
        let stores = try parse("""
            store = "tpm2"
            tpm2_tcti = "swtpm:host=127.0.0.1,port=2321"
            pass_prefix = "work/tokend/"
            \(account("a"))\(account("b", "store = \"pass\"\n"))
            """).stores
        #expect(stores.defaultStore == .tpm2)
        #expect(stores.store(of: "a") == .tpm2)
        #expect(stores.store(of: "b") == .pass)
        #expect(stores.storesInUse == [.tpm2, .pass])
        #expect(stores.tpm2TCTI == "swtpm:host=127.0.0.1,port=2321")
        #expect(stores.passPrefix == "work/tokend/")
    }

    @Test(arguments: [
        ("store = \"file\"\n", "store", 1),
        ("store = 1\n", "store", 1),
        ("pass_prefix = \"../x\"\n", "pass_prefix", 1),
        ("pass_prefix = \"/abs\"\n", "pass_prefix", 1),
        ("tpm2_tcti = \"\"\n", "tpm2_tcti", 1),
        ("[account.work]\nprovider = \"firebase\"\napi_key = \"k\"\nstore = \"plaintext\"\n", "account.work.store", 4),
    ])
    func badStoreKeysAreLocated(_ text: String, _ key: String, _ line: Int) {
        #expect {
            _ = try parse(text)
        } throws: { error in
            guard let error = error as? ConfigurationError else { return false }
            return error.key == key && error.line == line
        }
    }
}
