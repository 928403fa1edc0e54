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

extension IdentityProvider {
    /// The OAuth client, for a sign-in tokend runs itself.
    var oauth: OIDCProvider.Settings? {
        if case .oauth(let settings, _) = signIn { return settings }
        return nil
    }

    /// What Firebase is given, for a sign-in tokend runs itself.
    var credential: Credential? {
        if case .oauth(_, let credential) = signIn { return credential }
        return nil
    }
}
