import Testing
import TokendCore
import TokendKeyring
import TokendTestSupport

@Suite
struct InMemorySecretStoreTests {
    @Test func roundTripReplaceAndAccounts() async throws {
        let store = InMemorySecretStore()
        let first = TestTokens.tokens("first")
        let second = TestTokens.tokens("second")
        #expect(try await store.load(account: "work").get() == nil)

        try await store.save(first, account: "work").get()
        try await store.save(second, account: "work").get()
        try await store.save(first, account: "home").get()

        #expect(try await store.load(account: "work").get() == second)
        #expect(store.storedTokens(account: "home") == first)
        #expect(try await store.accounts().get() == ["home", "work"])
        #expect(await store.state() == .available)
        #expect(store.operationCount == 7)
    }

    /// The engine holds `any SecretStore` and calls the short forms.
    @Test func theShortFormsWorkThroughTheProtocol() async throws {
        let memory = InMemorySecretStore()
        let store: any SecretStore = memory
        let tokens = TestTokens.tokens("protocol")

        try await store.save(tokens, account: "work").get()
        #expect(try await store.load(account: "work").get() == tokens)
        #expect(try await store.accounts().get() == ["work"])
        #expect(await store.state() == .available)
        #expect(try await store.delete(account: "work", ifRefreshToken: tokens.refreshToken).get())
        #expect(memory.operationCount == 5)
    }

    @Test func compareAndDelete() async throws {
        let tokens = TestTokens.tokens("delete")
        let store = InMemorySecretStore(items: ["work": tokens])

        #expect(try await store.delete(account: "work", ifRefreshToken: "other").get() == false)
        #expect(store.storedTokens(account: "work") == tokens)
        #expect(try await store.delete(account: "work", ifRefreshToken: tokens.refreshToken).get())
        #expect(try await store.delete(account: "work").get() == false)
        #expect(try await store.accounts().get() == [])
    }

    @Test func lockedKeepsTheKeyringsRules() async throws {
        let tokens = TestTokens.tokens("locked")
        let store = InMemorySecretStore(items: ["work": tokens])
        store.simulatedState = .locked

        #expect(await store.state() == .locked)
        #expect(await store.load(account: "work").failure?.code == .locked)
        #expect(await store.load(account: "absent").success == .some(nil))
        #expect(await store.save(TestTokens.tokens("new"), account: "work").failure?.code == .locked)
        #expect(await store.delete(account: "work").failure?.code == .locked)
        #expect(try await store.accounts().get() == ["work"])

        store.simulatedState = .available
        #expect(try await store.load(account: "work").get() == tokens)
    }

    @Test func unavailableFailsEverything() async throws {
        let store = InMemorySecretStore(items: ["work": TestTokens.tokens("gone")])
        store.simulatedState = .unavailable

        #expect(await store.state() == .unavailable)
        #expect(await store.load(account: "work").failure?.code == .unavailable)
        #expect(await store.save(TestTokens.tokens("new"), account: "work").failure?.code == .unavailable)
        #expect(await store.delete(account: "work").failure?.code == .unavailable)
        #expect(await store.accounts().failure?.code == .unavailable)
        #expect(store.storedTokens(account: "work") != nil)
    }

    @Test func hangAnswersTimedOutAndDoesNothing() async throws {
        // Short: the test waits it out four times.
        let store = InMemorySecretStore(timeout: 0.05)
        store.hang = true

        #expect(await store.save(TestTokens.tokens("never"), account: "work").failure?.code == .timedOut)
        #expect(await store.load(account: "work").failure?.code == .timedOut)
        #expect(await store.accounts().failure?.code == .timedOut)
        #expect(await store.state() == .unavailable)

        store.hang = false
        #expect(try await store.load(account: "work").get() == nil)
        #expect(store.operationCount == 5)
    }

    @Test func aPlantedUnreadableItemIsCorrupt() async throws {
        let store = InMemorySecretStore()
        store.storeRaw("{\"not\": \"tokens\"}", account: "work")

        #expect(await store.load(account: "work").failure?.code == .corrupt)
        #expect(try await store.delete(account: "work", ifRefreshToken: "x").get() == false)
        #expect(try await store.delete(account: "work").get())
    }
}
