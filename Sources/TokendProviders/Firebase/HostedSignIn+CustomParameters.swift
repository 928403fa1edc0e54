import TokendCore

/// The provider's custom OAuth parameters the hosted page passes to the SDK's
/// `OAuthProvider.setCustomParameters` (firebase.google.com, "Authenticate Using Microsoft with
/// JavaScript": `tenant`, `prompt`, `login_hint`). Above all Microsoft's `tenant`: a
/// single-tenant Entra app, Azure's default registration, is refused at `/common` with
/// AADSTS50194 (JohnCoene/firebase#33, firebase/firebaseui-web#833).
///
/// Policy: only the keys below, each value bounded and of a few plain characters. The SDK
/// itself drops the reserved OAuth parameters (`client_id`, `redirect_uri`, `state`, …), and
/// whatever else a provider takes is not known here; a value goes into the provider's URL, so
/// nothing that could carry a second parameter or a script gets through.
extension HostedSignIn {
    /// Known keys: what each means, and to which providers it belongs (nil: any).
    static let customParameterKeys: [String: Set<String>?] = [
        // Microsoft: the tenant ID (GUID), a verified domain, or organizations / consumers.
        "tenant": ["microsoft.com"],
        // OpenID Connect Core §3.1.2.1, as Microsoft, Google and Apple take it.
        "prompt": nil,
        "login_hint": nil,
        // Microsoft's: which tenant's sign-in page to send the user to.
        "domain_hint": ["microsoft.com"],
    ]
    /// OpenID Connect's `prompt` values (space-separated).
    static let promptValues: Set<String> = ["none", "login", "consent", "select_account"]
    /// A tenant ID is 36 characters and an email address at most 254 (RFC 5321 §4.5.3.1.3):
    /// 256 holds every legitimate value and keeps the page's URL short.
    static let maximumCustomParameterLength = 256

    static func parseCustomParameters(id: String, _ value: ProviderConfigValue?, key: String) throws(ProviderConfigError) -> [String: String] {
        guard let value else { return [:] }
        guard case .table(let table) = value else {
            throw ProviderConfigError(key: key, "must be a table, such as { tenant = \"TENANT-ID\" }")
        }
        var parameters: [String: String] = [:]
        for (name, entry) in table.sorted(by: { $0.key < $1.key }) {
            guard let providers = customParameterKeys[name] else {
                throw ProviderConfigError(key: "\(key).\(name)", "is not a custom parameter tokend passes (known: \(customParameterKeys.keys.sorted().joined(separator: ", ")))")
            }
            if let providers, !providers.contains(id) {
                throw ProviderConfigError(key: "\(key).\(name)", "is \(providers.sorted().map(IdentityProvider.displayName).joined(separator: ", "))'s, not \(IdentityProvider.displayName(id))'s")
            }
            guard case .string(let text) = entry, !text.isEmpty, text.count <= maximumCustomParameterLength,
                text.unicodeScalars.allSatisfy({ $0.isASCII && (Character($0).isLetter || Character($0).isNumber || "-._@+ ".unicodeScalars.contains($0)) })
            else {
                throw ProviderConfigError(
                    key: "\(key).\(name)",
                    "must be a string of 1 to \(maximumCustomParameterLength) letters, digits and - . _ @ + (a tenant ID, a domain, an email address)")
            }
            if name == "prompt", !text.split(separator: " ").allSatisfy({ promptValues.contains(String($0)) }) {
                throw ProviderConfigError(key: "\(key).\(name)", "must be one or more of \(promptValues.sorted().joined(separator: ", ")), separated by spaces")
            }
            if name != "prompt", text.contains(" ") {
                throw ProviderConfigError(key: "\(key).\(name)", "must not contain spaces")
            }
            parameters[name] = text
        }
        return parameters
    }

    /// The advice for a failure of this page's sign-in with `id`: the shared words, and for a
    /// Microsoft popup closed without a tenant configured, the likely cause.
    func failure(code: String, id: String) -> PageFailure? {
        let name = IdentityProvider.displayName(id)
        guard var failure = Self.failure(code: code, name: name, authDomain: authDomain) else { return nil }
        if id == "microsoft.com", customParameters["tenant"] == nil, code == "auth/popup-closed-by-user" {
            failure.advice += "; if Microsoft said AADSTS50194 (an app of one tenant), set custom_parameters = { tenant = \"TENANT-ID\" } in the account's [idp.\"microsoft.com\"] table (README.md, \"Microsoft\")"
        }
        return failure
    }
}
