import Foundation
import Testing
import TokendCore
import TokendTestSupport

@testable import TokendKeyring

/// The router's side of moves and per-store moods (issue 48): the record overrides the
/// configuration, survives a restart (a new router on the same file), refuses every operation when
/// it cannot be read, and each store's mood is reported under its own kind.
@Suite struct StoreRouterTests {
    /// A router over in-memory stores, one per kind, with its record in `directory`.
    static func router(_ directory: TemporaryDirectory, settings: StoreSettings = StoreSettings(), stores: [StoreKind: InMemorySecretStore]) -> StoreRouter {
        StoreRouter(settings: settings, timeout: 1, record: StoreRecordFile(environment: ["XDG_STATE_HOME": directory.path])) { kind, _ in stores[kind]! }
    }

    static func stores() -> [StoreKind: InMemorySecretStore] {
        Dictionary(uniqueKeysWithValues: StoreKind.allCases.map { ($0, InMemorySecretStore()) })
    }

    @Test func aRecordedMoveOverridesTheConfigurationAcrossARestart() async throws {
        let directory = try TemporaryDirectory()
        defer { try? directory.remove() }
        let stores = Self.stores()
        let settings = StoreSettings(defaultStore: .pass)
        let router = Self.router(directory, settings: settings, stores: stores)
        #expect(router.kind(of: "work") == .pass)
        #expect((try? router.changeRecord("work") { $0.store = .tpm2; $0.leftovers.append(.pass) }.get()) != nil)
        #expect(router.kind(of: "work") == .tpm2)
        #expect(router.storesInUse == [.tpm2, .pass])
        #expect((try? await router.save(TokenSet(refreshToken: "rt"), account: "work").get()) != nil)
        #expect(stores[.tpm2]!.storedTokens(account: "work")?.refreshToken == "rt")
        #expect(stores[.pass]!.storedTokens(account: "work") == nil)

        let again = Self.router(directory, settings: settings, stores: stores)
        #expect(again.kind(of: "work") == .tpm2)
        #expect(again.moves.accounts["work"] == StoreRecord.Entry(store: .tpm2, leftovers: [.pass]))
        #expect(again.note(on: "work")?.contains("the configuration says pass") == true)
        #expect(again.note(on: "other") == nil)
        let attributes = try FileManager.default.attributesOfItem(atPath: directory.path + "/tokend/stores.json")
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        // An entry whose store is the account's and that has no leftover is dropped.
        #expect((try? again.changeRecord("work") { $0.store = nil; $0.leftovers = [] }.get()) != nil)
        #expect(Self.router(directory, settings: settings, stores: stores).moves.accounts.isEmpty)
    }

    @Test func anUnreadableRecordStopsEveryOperation() async throws {
        let directory = try TemporaryDirectory()
        defer { try? directory.remove() }
        try FileManager.default.createDirectory(atPath: directory.path + "/tokend", withIntermediateDirectories: true)
        try "{not json".write(toFile: directory.path + "/tokend/stores.json", atomically: true, encoding: .utf8)
        let router = Self.router(directory, stores: Self.stores())
        #expect(router.recordProblem?.code == .corrupt)
        guard case .failure(let error) = await router.load(account: "work") else { Issue.record("read past an unreadable record"); return }
        #expect(error.steps?.contains("tokenctl store move") == true)
        #expect(await router.states().values.allSatisfy { $0 == .unavailable })
    }

    @Test func eachStoreReportsItsOwnMood() async throws {
        let directory = try TemporaryDirectory()
        defer { try? directory.remove() }
        let stores = Self.stores()
        let pass = stores[.pass]!
        pass.simulatedState = .unavailable
        let router = Self.router(directory, settings: StoreSettings(defaultStore: .tpm2, accountStores: ["home": .pass]), stores: stores)
        #expect(await router.states() == [.tpm2: .available, .pass: .unavailable])
        #expect(await router.state() == .unavailable)
    }
}
