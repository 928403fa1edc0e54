import Foundation
import Testing
import TokendCore
import TokendProtocol
import TokendTestSupport

/// `tokenctl login ACCOUNT --device` through the real tokend: tokenctl prints where to go and
/// the code, the daemon polls the token endpoint through Google's variants of "not yet", and the
/// session it ends with is stored and served; a refusal exits 77 and stores nothing.
@Suite(.serialized) struct OIDCDeviceLoginTests {
    @Test func aDeviceLoginPollsUntilApprovedThenServes() async throws {
        try await withFakeOIDCAccount { world, fake in
            let refreshToken = "device-refresh-canary-\(fake.port)"
            fake.script([
                .json(400, ["error": "authorization_pending"]), .json(428, [:]),
                .json(200, ["access_token": "device-access-canary", "refresh_token": refreshToken, "expires_in": 600]),
            ])
            let login = try await world.tokenctl(["login", "corp", "--device", "--timeout", "60"])
            #expect(login.status == 0, "\(login.stderr)")
            let printed = login.stdout + login.stderr
            #expect(printed.contains("WDJB-MJHT"), "the user code is shown: \(printed)")
            #expect(printed.contains("/activate"), "and where to enter it (Google's verification_url): \(printed)")
            #expect(!printed.contains(refreshToken) && !printed.contains("device-access-canary"), "no token is printed")
            let token = try await world.tokenctl(["token", "corp"])
            #expect(token.status == 0 && token.stdout == "device-access-canary\n", "\(token.stderr)")
            #expect(try await world.storedSession("corp")?.refreshToken == refreshToken)
            #expect(fake.requests.filter { $0.path == "/token" }.allSatisfy { $0.form["device_code"] == "device-code-1" })
            #expect(!world.daemonLog.contains(refreshToken), "a secret reached the daemon's log")
        }
    }

    /// A login over a live session replaces it whole, and the replaced refresh token is revoked
    /// at the provider (with the account's client authentication) once the new one is stored.
    @Test func aLoginOverASessionRevokesTheReplacedRefreshToken() async throws {
        try await withFakeOIDCAccount(clientSecret: "client-secret-canary") { world, fake in
            let old = "old-refresh-canary-\(fake.port)"
            let imported = try await world.tokenctl(["import", "corp"], stdin: old + "\n")
            #expect(imported.status == 0, "\(imported.stderr)")
            #expect(fake.requests.allSatisfy { $0.path != "/revoke" })

            let new = "new-refresh-canary-\(fake.port)"
            fake.script([.json(200, ["access_token": "new-access-canary", "refresh_token": new, "expires_in": 600])])
            let login = try await world.tokenctl(["login", "corp", "--device", "--timeout", "60"])
            #expect(login.status == 0, "\(login.stderr)")
            #expect(try await world.storedSession("corp")?.refreshToken == new)
            let token = try await world.tokenctl(["token", "corp"])
            #expect(token.status == 0 && token.stdout == "new-access-canary\n", "\(token.stderr)")

            let revoke = try #require(fake.requests.last { $0.path == "/revoke" }, "the replaced session was never revoked")
            #expect(revoke.form["token"] == old)
            #expect(revoke.authorization == "Basic " + Data("cli:client-secret-canary".utf8).base64EncodedString())
            #expect(fake.requests.filter { $0.path == "/revoke" }.count == 1, "only the replaced token is revoked")
            for secret in [old, new, "new-access-canary", "client-secret-canary"] {
                #expect(!world.daemonLog.contains(secret), "a secret reached the daemon's log")
            }
        }
    }

    @Test func aRefusedDeviceLoginExits77AndStoresNothing() async throws {
        try await withFakeOIDCAccount { world, fake in
            fake.script([.json(400, ["error": "access_denied"])])
            let login = try await world.tokenctl(["login", "corp", "--device", "--timeout", "60"])
            #expect(login.status == 77, "\(login.status) \(login.stderr)")
            #expect(login.stderr.contains("access_denied"), "\(login.stderr)")
            #expect(try await world.storedSession("corp") == nil)
        }
    }
}
