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
