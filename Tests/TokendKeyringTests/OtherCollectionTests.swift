import Foundation
import Testing
import TokendCore
import TokendKeyring
import TokendTestSupport

/// Collections other than the default one, and other applications' items (issue 45, items 3 and
/// 4), in the same serialized suite: they share its keyring. tokend's items are those of its
/// schema (or of none: made by hand) in the default collection; an item of the same attributes
/// elsewhere, or of another schema, is never written, and a locked one never blocks.
extension LibsecretStoreTests {
    static let login = "/org/freedesktop/secrets/collection/login"

    /// A second collection (unlocked), deleted by `body`'s end.
    func withOtherCollection(_ label: String, _ body: (String) async throws -> Void) async throws {
        let collection = try keyring.collectionTool(["create", label]).check().stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        defer { _ = try? keyring.collectionTool(["delete", collection]) }
        try await body(collection)
    }

    /// Plants an item of tokend's attributes; returns its path.
    func plant(_ secret: String, account: String, schema: String, in collection: String) throws -> String {
        try keyring.collectionTool(["store", collection, schema, account], stdin: secret).check().stdout
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    func secret(of item: String) throws -> String { try keyring.collectionTool(["secret", item]).check().stdout }

    /// Before, the save wrote the session into all three planted items (the one in the second
    /// collection even of tokend's own schema) and created none of its own.
    @Test func aSaveWritesOnlyTokendsOwnItemInTheDefaultCollection() async throws {
        try await withOtherCollection("other application") { other in
            let account = TestTokens.account("others")
            let planted = [
                try plant("another app's, elsewhere", account: account, schema: "org.example.OtherApp", in: other),
                try plant("tokend's schema, elsewhere", account: account, schema: "org.tokend.Session", in: other),
                try plant("another app's, in login", account: account, schema: "org.example.OtherApp", in: Self.login),
            ]
            defer { _ = try? keyring.secretTool(["clear", "application", "tokend", "account", account]) }
            #expect(await store.load(account: account).success == .some(nil), "none of them is tokend's session")

            let tokens = TestTokens.tokens("others")
            try await store.save(tokens, account: account).get()

            #expect(try planted.map(secret(of:)) == ["another app's, elsewhere", "tokend's schema, elsewhere", "another app's, in login"])
            #expect(try await store.load(account: account).get() == tokens)
            #expect(try secretToolSearch(["application", "tokend", "account", account]).items == 4, "tokend made its own item")
            #expect(try await store.delete(account: account).get())
            #expect(try planted.map(secret(of:)).count == 3, "a logout leaves the others' items")
            #expect(await store.load(account: account).success == .some(nil))
        }
    }

    /// Before, a locked copy in another collection made every save (and the read) fail as
    /// needs_confirmation while the default collection was unlocked and empty.
    @Test func aLockedCopyInAnotherCollectionNeverBlocks() async throws {
        try await withOtherCollection("stale copy") { other in
            let account = TestTokens.account("stale")
            let stale = TestTokens.tokens("stale")
            _ = try plant(try stale.keyringJSON(), account: account, schema: "org.tokend.Session", in: other)
            defer { _ = try? keyring.secretTool(["clear", "application", "tokend", "account", account]) }
            _ = try keyring.collectionTool(["lock", other]).check()

            #expect(await store.load(account: account).success == .some(nil))
            let tokens = TestTokens.tokens("fresh")
            try await store.save(tokens, account: account).get()
            #expect(try await store.load(account: account).get() == tokens)
            #expect(try storedBySecretTool(account) == tokens)
            let bulk = try await store.loadAll().get()
            #expect(bulk.sessions[account]?.success == tokens)
            #expect(try await store.delete(account: account).get())
            #expect(await store.load(account: account).success == .some(nil))
        }
    }
}
