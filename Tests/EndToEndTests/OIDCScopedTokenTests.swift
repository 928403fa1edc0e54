import Foundation
import Testing
import TokendCore
import TokendTestSupport

/// Down-scoped access tokens through the real tokenctl and tokend, minted by the fake OIDC
/// provider from a session it rotates on every grant.
@Suite(.serialized) struct OIDCScopedTokenTests {
    @Test func scopedTokensAreNarrowCachedAndRotateTheSession() async throws {
        try await withFakeOIDCAccount(clientSecret: "client-secret-canary") { world, fake in
            let refreshToken = "refresh-token-canary-\(fake.port)"
            fake.grant(refreshToken: refreshToken, scopes: ["openid", "read:x", "write:y"], rotating: true)
            let imported = try await world.tokenctl(["import", "corp"], stdin: refreshToken + "\n")
            #expect(imported.status == 0, "\(imported.stderr)")
            let account = try await world.tokenctl(["token", "corp"])
            #expect(account.status == 0, "\(account.stderr)")

            // A narrowed token: another token than the account's, for what was asked.
            let asked = ["token", "corp", "--scope", "read:x", "--audience", "https://api.example.com"]
            let scoped = try await world.tokenctl(asked)
            #expect(scoped.status == 0, "\(scoped.stderr)")
            let narrow = scoped.stdout.trimmingCharacters(in: .newlines)
            #expect(narrow != account.stdout.trimmingCharacters(in: .newlines))
            #expect(fake.minted(narrow)?.scopes == ["read:x"] && fake.minted(narrow)?.resource == "https://api.example.com")

            // Served from the cache: no new grant, for `token` and for `header` alike.
            let grants = fake.refreshGrants.count
            let again = try await world.tokenctl(asked)
            #expect(again.stdout == scoped.stdout)
            let header = try await world.tokenctl(["header", "corp", "--scope", "read:x", "--audience", "https://api.example.com"])
            #expect(header.status == 0 && header.stdout == "Authorization: Bearer \(narrow)\n", "\(header.stderr)")
            #expect(fake.refreshGrants.count == grants)

            // Two other keys at once: one grant at a time, each with the newest refresh token,
            // and the keyring ends with the one the provider still honours.
            async let first = world.tokenctl(["token", "corp", "--scope", "write:y"])
            async let second = world.tokenctl(["token", "corp", "--scope", "read:x write:y", "--audience", "https://other.example.com"])
            let (one, two) = try await (first, second)
            #expect(one.status == 0 && two.status == 0, "\(one.stderr) \(two.stderr)")
            #expect(fake.minted(one.stdout.trimmingCharacters(in: .newlines))?.scopes == ["write:y"])
            #expect(fake.minted(two.stdout.trimmingCharacters(in: .newlines))?.scopes == ["read:x", "write:y"])
            let stored = try #require(try await world.storedSession("corp"))
            #expect(fake.liveRefreshTokens == [stored.refreshToken])
            #expect(try await world.status("corp").state == "active")

            // A scope the session never had: a clear error, exit 64, never a token.
            let wider = try await world.tokenctl(["token", "corp", "--scope", "read:x admin"])
            #expect(wider.status == 64, "\(wider.status) \(wider.stderr)")
            #expect(wider.stdout.isEmpty && wider.stderr.contains("invalid_scope"))
            // The refusal is the request's alone: the account still serves.
            #expect(try await world.tokenctl(["token", "corp"]).status == 0)
            // An ID token cannot be narrowed.
            let id = try await world.tokenctl(["token", "corp", "--kind", "id", "--scope", "read:x"])
            #expect(id.status == 64 && id.stdout.isEmpty && id.stderr.contains("ID token"), "\(id.stderr)")

            let log = world.daemonLog
            let presented = fake.refreshGrants.compactMap { $0.form["refresh_token"] }
            for secret in presented + [stored.refreshToken, narrow, one.stdout, two.stdout, "client-secret-canary"].map({ $0.trimmingCharacters(in: .newlines) }) {
                #expect(!log.contains(secret), "a secret reached the daemon's log")
            }
        }
    }
}
