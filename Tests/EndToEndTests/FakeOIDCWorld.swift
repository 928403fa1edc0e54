import TokendTestSupport

/// A daemon world with one OIDC account `corp` (client `cli`) on a fresh fake provider, the
/// daemon started; everything is torn down when `body` ends, however it ends.
func withFakeOIDCAccount(clientSecret: String? = nil, _ body: (DaemonHarness, FakeOIDC) async throws -> Void) async throws {
    let world = try await DaemonHarness.start(accounts: [], startDaemon: false)
    let fake = try await FakeOIDC.start()
    func tearDown() async {
        _ = try? await offPool { world.stopDaemon() }
        await fake.shutdown()
        await world.shutdown()
    }
    do {
        try world.writeConfig("""
            [account.corp]
            provider = "oidc"
            issuer = "\(fake.issuer)"
            client_id = "cli"
            \(clientSecret.map { "client_secret = \"\($0)\"" } ?? "")
            """)
        try await world.startDaemon()
        try await body(world, fake)
    } catch {
        await tearDown()
        throw error
    }
    await tearDown()
}
