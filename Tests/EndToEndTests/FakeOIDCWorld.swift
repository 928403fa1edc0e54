import TokendFakes
import TokendTestSupport

/// A daemon world with one OIDC account `corp` (client `cli`) on a fresh fake provider, the
/// daemon started; everything is torn down when `body` ends, however it ends.
func withFakeOIDCAccount(clientSecret: String? = nil, _ body: (DaemonHarness, FakeOIDC) async throws -> Void) async throws {
    try await withWorld(accounts: [], startDaemon: false) { world in
        let fake = try await FakeOIDC.start()
        try await withTearDown(fake, tearDown: { await $0.shutdown() }) { fake in
            try world.writeConfig("""
                [account.corp]
                provider = "oidc"
                issuer = "\(fake.issuer)"
                client_id = "cli"
                \(clientSecret.map { "client_secret = \"\($0)\"" } ?? "")
                """)
            try await world.startDaemon()
            try await body(world, fake)
        }
    }
}
