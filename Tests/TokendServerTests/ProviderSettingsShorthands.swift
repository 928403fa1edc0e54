import TokendProviders
import TokendServer

/// Shorthands for the tests that build configurations in code (the daemon reads them from TOML).
extension AnyProviderSettings {
    static func firebase(apiKey: String, emulatorHost: String?) -> AnyProviderSettings {
        AnyProviderSettings(FirebaseProvider.Settings(apiKey: apiKey, emulatorHost: emulatorHost))
    }

    static func oidc(_ settings: OIDCProvider.Settings) -> AnyProviderSettings {
        AnyProviderSettings(settings)
    }
}
