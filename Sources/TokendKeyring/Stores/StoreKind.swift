import TokendCore

/// The configuration's store keys (top level and per account), as the router applies them.
public struct StoreSettings: Sendable, Equatable {
    /// `store` at the top level: where an account without its own `store` key lives.
    public var defaultStore: StoreKind
    /// `store` in an account's table.
    public var accountStores: [String: StoreKind]
    /// `pass_prefix`: the folder of the password store that holds one entry per account.
    public var passPrefix: String
    /// `tpm2_tcti`: the TCTI string handed to tpm2-tss's loader; nil: its default
    /// (`TPM2TOOLS_TCTI`/`TCTI` in the environment, else /dev/tpmrm0).
    public var tpm2TCTI: String?

    /// `tokend/`: entries show in `pass ls` under a folder named after the program.
    public static let defaultPassPrefix = "tokend/"

    public init(
        defaultStore: StoreKind = .secretService, accountStores: [String: StoreKind] = [:],
        passPrefix: String = StoreSettings.defaultPassPrefix, tpm2TCTI: String? = nil
    ) {
        self.defaultStore = defaultStore
        self.accountStores = accountStores
        self.passPrefix = passPrefix
        self.tpm2TCTI = tpm2TCTI
    }

    public func store(of account: String) -> StoreKind { accountStores[account] ?? defaultStore }

    /// Every store some account (or the default) uses: the ones the daemon probes.
    public var storesInUse: [StoreKind] {
        StoreKind.allCases.filter { $0 == defaultStore || accountStores.values.contains($0) }
    }
}
