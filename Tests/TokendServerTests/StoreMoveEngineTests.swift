import Synchronization
import Testing
import TokendCore
import TokendFakes
import TokendKeyring
@testable import TokendServer
import TokendSystem
import TokendTestSupport

/// A move's one narrow window, which a kill -9 test cannot aim at: a rotation that lands in the
/// old store after the copy was written to the new one but before the switch. The move must see
/// that the session changed and copy again, so the new store ends with the rotated token.
@Suite struct StoreMoveEngineTests {
    /// Opens once: whoever waits before `open()` waits until it.
    actor Latch {
        private var isOpen = false
        private var waiting: [CheckedContinuation<Void, Never>] = []

        func wait() async {
            if isOpen { return }
            await withCheckedContinuation { waiting.append($0) }
        }

        func open() {
            isOpen = true
            for continuation in waiting { continuation.resume() }
            waiting = []
        }
    }

    /// The move's target: an in-memory store whose first read (the move's read-back, step 3)
    /// says it started and then waits for the test.
    final class GatedStore: SecretStore {
        let inner = InMemorySecretStore(timeout: 2)
        let readBackStarted = Latch()
        let release = Latch()
        private let gated = Mutex(true)

        func load(account: String, isolation: isolated (any Actor)?) async -> Result<TokenSet?, KeyringError> {
            if gated.withLock({ gated in defer { gated = false }; return gated }) {
                await readBackStarted.open()
                await release.wait()
            }
            return await inner.load(account: account, isolation: isolation)
        }

        func save(_ tokens: TokenSet, account: String, isolation: isolated (any Actor)?) async -> Result<Void, KeyringError> {
            await inner.save(tokens, account: account, isolation: isolation)
        }

        func delete(account: String, ifRefreshToken: String?, isolation: isolated (any Actor)?) async -> Result<Bool, KeyringError> {
            await inner.delete(account: account, ifRefreshToken: ifRefreshToken, isolation: isolation)
        }

        func accounts(isolation: isolated (any Actor)?) async -> Result<[String], KeyringError> { await inner.accounts(isolation: isolation) }

        func state(isolation: isolated (any Actor)?) async -> KeyringState { await inner.state(isolation: isolation) }
    }

    @Test func aRotationBetweenTheCopyAndTheSwitchIsCopiedAgain() async throws {
        var options = FakeFirebase.Options()
        options.rotate = true
        let target = GatedStore()
        let fixture = try await EngineFixture.make(options: options) { source in
            BootAnchoredStore(StoreRouter(timeout: 2) { kind, _ in kind == .tpm2 ? target as any SecretStore : source }, clock: SystemWallClock())
        }
        try await withTearDown(fixture, tearDown: { await $0.shutdown() }) { fixture in
            let session = try await fixture.importSession()
            // The import's own first refresh rotates: settled once the old store holds the newest.
            try await poll("the imported session is refreshed and stored") {
                let state = try await fixture.engine.statuses(account: "work").get().first?.state
                return state == "active" && fixture.store.storedTokens(account: "work")?.refreshToken == fixture.fake.newestRefreshToken(uid: session.uid)
            }
            let copied = fixture.store.storedTokens(account: "work")?.refreshToken
            async let moving = fixture.engine.moveStore("work", to: .tpm2)
            await target.readBackStarted.wait()
            // Step 2 is done (the copy is in the target); the rotation lands in the old store.
            _ = try await fixture.engine.commands.refresh(account: "work", timeout: Patience.seconds).get()
            let newest = try #require(fixture.fake.newestRefreshToken(uid: session.uid))
            #expect(newest != copied, "the provider rotated")
            await target.release.open()
            let outcome = try await moving.get()
            #expect(outcome.moved && outcome.copiedSession && outcome.leftover == nil)
            #expect(target.inner.storedTokens(account: "work")?.refreshToken == newest, "the new store holds the rotated token")
            #expect(fixture.store.storedTokens(account: "work") == nil, "the old copy is removed")
            #expect(try await fixture.engine.statuses(account: "work").get().first?.store == .tpm2)
        }
    }
}
