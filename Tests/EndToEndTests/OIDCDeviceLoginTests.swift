import Foundation
import Testing
import TokendCore
import TokendFakes
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
                .object(400, ["error": "authorization_pending"]), .object(428, [:]),
                .object(200, ["access_token": "device-access-canary", "refresh_token": refreshToken, "expires_in": 600]),
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
            fake.script([.object(200, ["access_token": "new-access-canary", "refresh_token": new, "expires_in": 600])])
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
            fake.script([.object(400, ["error": "access_denied"])])
            let login = try await world.tokenctl(["login", "corp", "--device", "--timeout", "60"])
            #expect(login.status == 77, "\(login.status) \(login.stderr)")
            #expect(login.stderr.contains("access_denied"), "\(login.stderr)")
            #expect(try await world.storedSession("corp") == nil)
        }
    }
}

/// A device authorization answer's numbers come from the provider: NaN, 1e19 or a negative
/// number is a clear login failure (exit 75), and the daemon keeps serving. Before they were
/// bounded, `expires_in: 1e19` trapped on a Double-to-Int conversion and killed tokend.
@Suite(.serialized) struct OIDCDeviceGrantNumberTests {
    static let absurd: [(field: String, value: any Sendable)] = [
        ("expires_in", 1e19), ("expires_in", "nan"), ("expires_in", "inf"), ("expires_in", -5),
        ("interval", 1e17), ("interval", "nan"), ("interval", -1),
    ]

    @Test(arguments: 0..<absurd.count)
    func anAbsurdDeviceGrantNumberIsAClearFailure(_ index: Int) async throws {
        let (field, value) = Self.absurd[index]
        try await withFakeOIDCAccount { world, fake in
            var grant: [String: any Sendable] = [
                "device_code": "device-code-1", "user_code": "WDJB-MJHT", "verification_uri": fake.issuer + "/activate",
                "expires_in": 600, "interval": 1,
            ]
            grant[field] = value
            fake.script([.object(200, grant)], for: "/device")
            let login = try await world.tokenctl(["login", "corp", "--device", "--timeout", "30"])
            #expect(login.status == 75, "\(field)=\(value): exit \(login.status), \(login.stderr)")
            #expect(login.stderr.contains("unusable \(field)"), "\(login.stderr)")
            #expect(login.stderr.split(separator: "\n").count <= 2, "one line and what to do next: \(login.stderr)")
            let status = try await world.tokenctl(["status", "corp"])
            #expect(status.status == 0, "the daemon still answers: \(status.status) \(status.stderr)")
            #expect(!world.daemonLog.contains("Fatal error"), "\(world.daemonLog)")
        }
    }

    /// A plausible but out-of-range answer is clamped, not refused: an hour-long code and a
    /// zero interval still sign in.
    @Test func aLongCodeLifeAndAZeroIntervalAreClampedAndSignIn() async throws {
        try await withFakeOIDCAccount { world, fake in
            fake.script([.object(200, [
                "device_code": "device-code-1", "user_code": "WDJB-MJHT", "verification_uri": fake.issuer + "/activate",
                "expires_in": 3600, "interval": 0,
            ])], for: "/device")
            fake.script([.object(200, ["access_token": "clamped-access", "refresh_token": "clamped-refresh", "expires_in": 600])])
            let login = try await world.tokenctl(["login", "corp", "--device", "--timeout", "30"])
            #expect(login.status == 0, "\(login.stderr)")
        }
    }

    /// A bare 403 while polling (a proxy or firewall, not Google's `slow_down` body) ends the
    /// login with the status, instead of polling slower and slower until the timeout.
    @Test func aBare403WhilePollingEndsTheLogin() async throws {
        try await withFakeOIDCAccount { world, fake in
            fake.script([.init(status: 403, body: "")])
            let login = try await world.tokenctl(["login", "corp", "--device", "--timeout", "30"])
            #expect(login.status == 78, "\(login.status) \(login.stderr)")
            #expect(login.stderr.contains("HTTP 403"), "\(login.stderr)")
            #expect(fake.requests.filter { $0.path == "/token" }.count == 1)
        }
    }
}
