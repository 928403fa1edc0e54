import Foundation
import Logging
import Testing
import TokendCore
import TokendKeyring
import TokendProviders
@testable import TokendServer
import TokendTestSupport

/// A restore of many accounts reads the keyring in bulk (`SecretStore.loadAll`) and reads one by
/// one only what the bulk read could not attribute (issue 20: 10,000 accounts read one by one
/// took minutes).
@Suite(.timeLimit(.minutes(1))) struct BulkRestoreTests {
    /// An engine with Firebase accounts `names` (never refreshed here: the endpoint is closed).
    func withEngine(_ names: [String], store: InMemorySecretStore, _ body: (AccountEngine) async throws -> Void) async throws {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let transport = HTTPTransport(environment: [:])
        let engine = AccountEngine(store: store, hub: EventHub(), logger: logger) { Daemon.provider(for: $0, transport: transport) }
        var accounts: [String: AccountConfiguration] = [:]
        for name in names {
            accounts[name] = AccountConfiguration(name: name, provider: .firebase(apiKey: "k", emulatorHost: "127.0.0.1:9"), refreshBefore: 300)
        }
        await engine.apply(Configuration(accounts: accounts))
        try await withTearDown(engine, tearDown: { engine in
            await engine.shutdown()
            await transport.shutdown()
        }, body)
    }

    func state(_ engine: AccountEngine, _ name: String) async throws -> String {
        try #require(try await engine.statuses(account: name).get().first).state
    }

    static func session(_ name: String) -> TokenSet {
        TokenSet(refreshToken: "refresh-\(name)", idToken: "id-\(name)", idTokenExpiresAt: Date().addingTimeInterval(3600), issuedAt: Date())
    }

    @Test func manyAccountsAreRestoredWithOneBulkRead() async throws {
        let store = InMemorySecretStore(timeout: 2, items: ["a": Self.session("a"), "b": Self.session("b")])
        store.storeRaw("not a token set", account: "corrupt")
        try await withEngine(["a", "b", "corrupt", "absent"], store: store) { engine in
            #expect(store.bulkReads == 1)
            #expect(store.reads == 0)
            #expect(try await state(engine, "a") == "active")
            #expect(try await state(engine, "b") == "active")
            #expect(try await state(engine, "absent") == "needs_login")
            let corrupt = try #require(try await engine.statuses(account: "corrupt").get().first)
            #expect(corrupt.state == "needs_login")
            let served = await engine.commands.token(account: "a", kind: .id, minValid: 60, timeout: 1)
            #expect(try served.get().token == "id-a")
        }
    }

    @Test func whatTheBulkReadCannotAttributeIsReadOneByOne() async throws {
        let store = InMemorySecretStore(timeout: 2, items: ["a": Self.session("a"), "b": Self.session("b")])
        store.simulatedState = .locked
        try await withEngine(["a", "b", "absent"], store: store) { engine in
            #expect(store.bulkReads == 1)
            #expect(store.reads == 3)
            // Locked is not empty: the items wait for the keyring, the absent account does not.
            #expect(try await state(engine, "a") == "waiting_for_keyring")
            #expect(try await state(engine, "b") == "waiting_for_keyring")
            #expect(try await state(engine, "absent") == "needs_login")
            store.simulatedState = .available
            // The keyring's poll reads the waiting accounts again, in bulk.
            try await poll("the poll restores both accounts") {
                let a = try await state(engine, "a")
                let b = try await state(engine, "b")
                return a == "active" && b == "active"
            }
            #expect(store.bulkReads == 2)
        }
    }

    @Test func aBulkReadThatFailsIsEveryAccountsFailure() async throws {
        let store = InMemorySecretStore(timeout: 2, items: ["a": Self.session("a")])
        store.simulatedState = .unavailable
        try await withEngine(["a", "b"], store: store) { (engine: AccountEngine) async throws in
            // Not read one by one after it: behind a frozen keyring that would be one timeout each.
            #expect(store.reads == 0)
            #expect(try await state(engine, "a") == "waiting_for_keyring")
            #expect(try await state(engine, "b") == "waiting_for_keyring")
        }
    }
}
