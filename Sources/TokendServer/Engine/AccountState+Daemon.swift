import TokendCore
import TokendKeyring
import TokendProviders

// The account state the daemon holds is TokendCore's, over the daemon's configuration, its
// providers and its keyring's failures; these names shadow the generic ones inside the engine.
typealias AccountState = TokendCore.AccountState<AccountConfiguration, any TokenProvider, KeyringError>
typealias AccountInput = TokendCore.AccountInput<AccountConfiguration, any TokenProvider, KeyringError>
typealias AccountEffect = TokendCore.AccountEffect<KeyringError>

extension AccountConfiguration: AccountSettings {
    public var narrowsTokens: Bool { provider.base.descriptor.capabilities.contains(.scopedTokens) }
    public var kindName: String { kind.rawValue }
    /// The sign-in methods the provider offers, as `tokenctl login` names them (`Advice.methodNotOffered`).
    var loginMethodNames: [String] { provider.base.descriptor.loginMethods.map(\.rawValue) }
}
