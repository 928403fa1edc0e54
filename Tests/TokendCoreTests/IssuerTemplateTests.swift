import Testing
import TokendCore

/// Microsoft's multi-tenant issuer: a discovery document at `common` names a `{tenantid}`
/// template, and an ID token's `iss` matches it only with its own `tid` in the placeholder.
@Suite struct IssuerTemplateTests {
    static let template = "https://login.microsoftonline.com/{tenantid}/v2.0"

    @Test func aTokenMatchesTheTemplateWithItsOwnTenant() {
        let tenant = "3c4e9d0f-7a21-4b6e-9f0a-5d2c8e1b7a64"
        #expect(IssuerTemplate.matches(Self.template, issuer: "https://login.microsoftonline.com/\(tenant)/v2.0", tenant: tenant))
        #expect(!IssuerTemplate.matches(Self.template, issuer: "https://login.microsoftonline.com/\(tenant)/v2.0", tenant: "another-tenant"))
        #expect(!IssuerTemplate.matches(Self.template, issuer: "https://login.microsoftonline.com/\(tenant)/v2.0", tenant: nil))
        // A tenant that is not one path segment could make the template name another issuer.
        #expect(!IssuerTemplate.matches(Self.template, issuer: "https://login.microsoftonline.com/x/y/v2.0", tenant: "x/y"))
        #expect(!IssuerTemplate.matches(Self.template, issuer: "https://login.microsoftonline.com//v2.0", tenant: ""))
        #expect(!IssuerTemplate.matches(Self.template, issuer: nil, tenant: tenant))
    }

    @Test func withoutAPlaceholderOnlyTheSameIssuerMatches() {
        #expect(IssuerTemplate.matches("https://accounts.google.com", issuer: "https://accounts.google.com", tenant: "x"))
        #expect(!IssuerTemplate.matches("https://accounts.google.com", issuer: "https://accounts.google.com/", tenant: nil))
    }

    @Test func discoveryAtATenantAliasMayNameTheTemplate() {
        #expect(IssuerTemplate.isTemplate(Self.template, of: "https://login.microsoftonline.com/common/v2.0"))
        #expect(IssuerTemplate.isTemplate(Self.template, of: "https://login.microsoftonline.com/organizations/v2.0"))
        #expect(IssuerTemplate.isTemplate("https://a.example", of: "https://a.example"))
        #expect(!IssuerTemplate.isTemplate(Self.template, of: "https://evil.example/common/v2.0"))
        #expect(!IssuerTemplate.isTemplate(Self.template, of: "https://login.microsoftonline.com/a/b/v2.0"))
        #expect(!IssuerTemplate.isTemplate(Self.template, of: "https://login.microsoftonline.com//v2.0"))
        #expect(!IssuerTemplate.isTemplate("https://b.example", of: "https://a.example"))
    }
}
