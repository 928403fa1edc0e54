import Foundation
import Testing
import TokendFakes
import TokendProviders
import TokendTestSupport

/// Issue 33, item 6: an account of an Identity Platform tenant (`tenant_id`). Every Identity
/// Toolkit call names the tenant, its users are the tenant's (the project's own user with the
/// same address is another user), the ID token's `firebase.tenant` is checked on sign-in and
/// refresh, and `account show` names the tenant.
@Suite struct TenantTests {
    static let tenant = "acme-x1y2z"

    @Test func aTenantAccountSignsInAmongItsTenantsUsersAndRefusesAnotherSession() async throws {
        try await withWorld(accounts: [], startDaemon: false) { world in
            try world.writeConfig(world.firebaseAccount("work") + "\ntenant_id = \"\(Self.tenant)\"\n")
            try await world.startDaemon()
            // The project's own user with the address: the tenant's sign-up is another user.
            let projectUser = world.fake.createUser(email: "ten@example.com", password: "project-password-1")
            let signUp = try await world.tokenctl(["login", "work", "--email", "ten@example.com", "--create"], stdin: "tenant-password-1\n")
            #expect(signUp.status == 0, "\(signUp.stderr)")
            let token = try await world.tokenctl(["token", "work"])
            let claims = try #require(FirebaseClaims(token: token.stdout.trimmingCharacters(in: .newlines)))
            #expect(claims.tenant == Self.tenant)
            #expect(claims.uid != projectUser.uid)

            #expect(try await world.tokenctl(["refresh", "work"]).status == 0)
            let refreshed = try await world.tokenctl(["token", "work"])
            #expect(FirebaseClaims(token: refreshed.stdout.trimmingCharacters(in: .newlines))?.tenant == Self.tenant)

            let shown = try await world.tokenctl(["account", "show", "work"])
            #expect(shown.status == 0 && shown.stdout.contains("tenant") && shown.stdout.contains(Self.tenant), "\(shown.stdout) \(shown.stderr)")

            // Every Identity Toolkit call (sign-up, lookup) named the tenant.
            let toolkit = world.fake.requests.filter { $0.path.contains("identitytoolkit") }
            #expect(toolkit.count >= 2 && toolkit.allSatisfy { $0.tenantID == Self.tenant }, "\(toolkit.map { "\($0.path) \($0.tenantID ?? "none")" })")

            // A session of the project's own users is not the tenant's: refused and not kept.
            let foreign = world.fake.createUser()
            let imported = try await world.tokenctl(["import", "work"], stdin: foreign.refreshToken + "\n")
            #expect(imported.status == 77, "\(imported.stderr)")
            #expect(imported.stderr.contains("TENANT_MISMATCH") && imported.stderr.contains(Self.tenant), "\(imported.stderr)")
            // Stored at once, it is deleted once refused; the answer does not wait for that delete.
            try await world.storedSessionDeleted("the other session was kept")
        }
    }
}
