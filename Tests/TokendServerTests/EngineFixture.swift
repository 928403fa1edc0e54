import Logging
import TokendCore
import TokendKeyring
import TokendProtocol
import TokendProviders
@testable import TokendServer
import TokendFakes
import TokendSystem
import TokendTestSupport

/// An engine wired to the fake (in-process by default, through the transport seam; or over
/// loopback) and an in-memory keyring: the daemon minus its socket.
struct EngineFixture {
    let fake: FakeFirebase
    let store: InMemorySecretStore
    let engine: AccountEngine
    let handler: RequestRouter
    let transport: HTTPTransport

    static func make(
        options: FakeFirebase.Options = .init(), store: InMemorySecretStore = InMemorySecretStore(timeout: 2), clock: (any WallClock)? = nil,
        serving: FakeFirebase.Serving = .inProcess, wrapping: ((InMemorySecretStore) -> any SecretStore)? = nil
    ) async throws -> EngineFixture {
        var options = options
        if let clock { options.clock = clock }
        let fake = try await FakeFirebase.start(serving: serving, options: options)
        let transport = fake.transport()
        let hub = EventHub()
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        // `wrapping`: the engine sees another store built around the in-memory one (a router).
        let engine = AccountEngine(store: wrapping?(store) ?? store, clock: clock ?? SystemWallClock(), hub: hub, logger: logger) { configuration in
            Daemon.provider(for: configuration, transport: transport)
        }
        let configuration = Configuration(accounts: [
            "work": AccountConfiguration(name: "work", provider: .firebase(apiKey: "k", emulatorHost: fake.emulatorHost), refreshBefore: 300)
        ])
        await engine.apply(configuration)
        return EngineFixture(fake: fake, store: store, engine: engine, handler: RequestRouter(engine: engine, hub: hub, version: "test"), transport: transport)
    }

    func shutdown() async {
        await engine.shutdown()
        await transport.shutdown()
        try? await fake.shutdown()
    }

    func importSession() async throws -> FakeFirebase.Session {
        let session = fake.createUser()
        _ = try await engine.commands.install(account: "work", tokens: TokenSet(refreshToken: session.refreshToken), timeout: Patience.seconds).get()
        return session
    }

    func respond(_ command: Command) async -> Response {
        guard case .response(let response) = await handler.handle(DecodedRequest(command)) else { return Response.failure(TokendError(.internal, "watch")) }
        return response
    }

    var tokenRequests: Int { fake.requests.filter { $0.path.contains("securetoken") }.count }
}
