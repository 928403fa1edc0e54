/// Microsoft Entra's multi-tenant issuer: discovery at `…/common/v2.0` (or `organizations`,
/// `consumers`) names the issuer `https://login.microsoftonline.com/{tenantid}/v2.0`, and each
/// ID token's `iss` has the user's tenant there, the same as its `tid` claim. Microsoft's own
/// guidance is to check `iss` against the template with `tid` put in (Microsoft identity
/// platform, "ID tokens", validating the issuer). Shared by the sign-in and the Firebase fake.
public enum IssuerTemplate {
    public static let placeholder = "{tenantid}"

    /// Whether `issuer` is what `expected` names: the same string, or — when `expected` holds
    /// the placeholder — the template with `tenant` (the token's `tid`) in its place. A tenant
    /// must be one path segment: anything else could make the template name another issuer.
    public static func matches(_ expected: String, issuer: String?, tenant: String?) -> Bool {
        guard let issuer else { return false }
        guard expected.contains(placeholder) else { return issuer == expected }
        guard let tenant, !tenant.isEmpty, tenant.allSatisfy(isSegmentCharacter) else { return false }
        return issuer == expected.replacing(placeholder, with: tenant)
    }

    /// Whether a discovery document fetched at `configured` may name `documented` as its
    /// issuer: the same, or the template whose placeholder stands where `configured` has a
    /// tenant alias (`https://…/common/v2.0` against `https://…/{tenantid}/v2.0`).
    public static func isTemplate(_ documented: String, of configured: String) -> Bool {
        guard documented != configured else { return true }
        guard let range = documented.firstRange(of: placeholder) else { return false }
        let prefix = documented[..<range.lowerBound], suffix = documented[range.upperBound...]
        guard configured.hasPrefix(prefix), configured.hasSuffix(suffix), configured.count > prefix.count + suffix.count else { return false }
        let alias = configured.dropFirst(prefix.count).dropLast(suffix.count)
        return alias.allSatisfy(isSegmentCharacter)
    }

    /// Characters of a tenant id or alias: GUIDs, `common`, domain names.
    static func isSegmentCharacter(_ character: Character) -> Bool {
        character.isASCII && (character.isLetter || character.isNumber || character == "-" || character == "." || character == "_")
    }
}
