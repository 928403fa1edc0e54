import Foundation
import Testing
import TokendCore
import TokendKeyring
import TokendTestSupport

/// `LibsecretStore` against a real gnome-keyring on a private session bus.
///
/// Serialized: the tests lock, unlock and restart the one keyring this process's libsecret is
/// bound to. It is always our own private keyring, even when the environment already offers a
/// session bus, because only a keyring whose password we know can be unlocked again.
@Suite(.serialized)
struct LibsecretStoreTests {
    let keyring: PrivateKeyring
    let store = LibsecretStore()

    init() async throws {
        keyring = try PrivateKeyring.sharedForThisProcess()
        // A test that failed half-way may have left it locked or stopped.
        if await store.state() != .available {
            try keyring.restart()
        }
    }

    /// What `secret-tool` (another process, on the private bus) reads for the account.
    func storedBySecretTool(_ account: String) throws -> TokenSet? {
        try keyring.secretToolLookup(account: account).map { try TokenSet(keyringJSON: $0) }
    }

    /// What `secret-tool search --all` finds: how many items, and everything it printed (it
    /// prints item paths, labels and secrets on stdout, the attributes on stderr).
    func secretToolSearch(_ attributes: [String]) throws -> (items: Int, text: String) {
        let result = try keyring.secretTool(["search", "--all"] + attributes).check()
        return (result.stdout.split(separator: "\n").filter { $0.hasPrefix("[/") }.count, result.stdout + result.stderr)
    }

    @Test func saveThenLoadRoundTrips() async throws {
        let account = TestTokens.account("roundtrip")
        let tokens = TestTokens.tokens("roundtrip")
        #expect(await store.load(account: account).success == .some(nil))

        try await store.save(tokens, account: account).get()

        #expect(try await store.load(account: account).get() == tokens)
        // The item is where docs/architecture.md ("The keyring") says, readable by the stock tools.
        #expect(try storedBySecretTool(account) == tokens)
        let search = try secretToolSearch(["application", "tokend", "account", account])
        #expect(search.items == 1)
        #expect(search.text.contains("label = tokend session: \(account)"))
        #expect(search.text.contains("attribute.application = tokend"))
    }

    @Test func sixteenKibibyteTokensRoundTrip() async throws {
        let account = TestTokens.account("large")
        let tokens = TestTokens.tokens("large", size: 16 * 1024)
        #expect(tokens.refreshToken.utf8.count > 16 * 1024)
        #expect(tokens.idToken!.utf8.count > 16 * 1024)

        try await store.save(tokens, account: account).get()

        #expect(try await store.load(account: account).get() == tokens)
        #expect(try storedBySecretTool(account) == tokens)
    }

    @Test func saveReplacesTheItemInPlace() async throws {
        let account = TestTokens.account("replace")
        let first = TestTokens.tokens("first")
        let second = TestTokens.tokens("second")

        try await store.save(first, account: account).get()
        try await store.save(second, account: account).get()

        #expect(try await store.load(account: account).get() == second)
        #expect(try secretToolSearch(["application", "tokend", "account", account]).items == 1)
    }

    @Test func secretToolSearchAndAccountsListEveryAccount() async throws {
        let names = [TestTokens.account("list-b"), TestTokens.account("list-a")]
        for name in names { try await store.save(TestTokens.tokens(name), account: name).get() }

        let listed = try await store.accounts().get()
        #expect(Set(names).isSubset(of: listed))
        #expect(listed == listed.sorted())
        let search = try secretToolSearch(["application", "tokend"]).text
        for name in names { #expect(search.contains("attribute.account = \(name)")) }

        #expect(try await store.delete(account: names[0]).get())
        #expect(try await !store.accounts().get().contains(names[0]))
    }

    @Test func deleteAndCompareAndDelete() async throws {
        let account = TestTokens.account("delete")
        let tokens = TestTokens.tokens("delete")
        try await store.save(tokens, account: account).get()

        // A logout that raced a rotation: the stored refresh token is not the one it meant.
        #expect(try await store.delete(account: account, ifRefreshToken: "some-older-refresh-token").get() == false)
        #expect(try await store.load(account: account).get() == tokens)

        #expect(try await store.delete(account: account, ifRefreshToken: tokens.refreshToken).get())
        #expect(try await store.load(account: account).get() == nil)
        #expect(try storedBySecretTool(account) == nil)
        #expect(try await store.delete(account: account).get() == false)

        try await store.save(tokens, account: account).get()
        #expect(try await store.delete(account: account).get())
        #expect(try await store.load(account: account).get() == nil)
    }

    @Test func anUnreadableItemIsCorruptAndKept() async throws {
        let account = TestTokens.account("corrupt")
        _ = try keyring.secretTool(
            ["store", "--label=hand-made", "application", "tokend", "account", account], stdin: "not a token set"
        ).check()

        let error = await store.load(account: account).failure
        #expect(error?.code == .corrupt)
        #expect(error.map { !String(describing: $0).contains("not a token set") } == true)
        #expect(try await store.delete(account: account, ifRefreshToken: "anything").get() == false)
        #expect(keyring.secretToolLookup(account: account) == "not a token set")
        #expect(try await store.accounts().get().contains(account))

        // An unconditional delete (logout) still removes it.
        #expect(try await store.delete(account: account).get())
        #expect(keyring.secretToolLookup(account: account) == nil)
    }

    @Test func aBulkReadFindsEveryItemNamingItsAccountAndLeavesTheRestToLoad() async throws {
        let named = TestTokens.account("bulk-named")
        let copied = TestTokens.account("bulk-copied")
        let copy = TestTokens.account("bulk-copy")
        let handMade = TestTokens.account("bulk-hand")
        let unreadable = TestTokens.account("bulk-unreadable")
        let tokens = (named: TestTokens.tokens("named"), copied: TestTokens.tokens("copied"), handMade: TestTokens.tokens("hand"))
        try await store.save(tokens.named, account: named).get()
        try await store.save(tokens.copied, account: copied).get()
        // The secret names its account beside the tokens.
        let copiedSecret = try #require(keyring.secretToolLookup(account: copied))
        #expect(TokenSet.keyringAccount(in: copiedSecret) == copied)
        // Made by hand: `copied`'s secret under another account, so two items name `copied`; a
        // token set that names no account (as tokend wrote them before); a named non-token-set.
        func plant(_ secret: String, as account: String) throws {
            _ = try keyring.secretTool(["store", "--label=hand-made", "application", "tokend", "account", account], stdin: secret).check()
        }
        try plant(copiedSecret, as: copy)
        try plant(try tokens.handMade.keyringJSON(), as: handMade)
        try plant(#"{"account":"\#(unreadable)"}"#, as: unreadable)
        defer { for account in [named, copied, copy, handMade, unreadable] { _ = try? keyring.secretTool(["clear", "application", "tokend", "account", account]) } }

        let read = try await store.loadAll().get()

        #expect(read.sessions[named]?.success == tokens.named)
        #expect(read.sessions[unreadable]?.failure?.code == .corrupt)
        #expect(read.sessions[copied] == nil)
        #expect(read.sessions[copy] == nil)
        #expect(read.sessions[handMade] == nil)
        #expect(read.othersMayExist)
        // What it left out, each account's own read attributes.
        #expect(try await store.load(account: copied).get() == tokens.copied)
        #expect(try await store.load(account: copy).get() == tokens.copied)
        #expect(try await store.load(account: handMade).get() == tokens.handMade)
    }

    @Test func aLockedKeyringIsNeverTakenForAnEmptyOne() async throws {
        let account = TestTokens.account("locked")
        let tokens = TestTokens.tokens("locked")
        try await store.save(tokens, account: account).get()
        #expect(await store.state() == .available)

        try keyring.lock()

        #expect(await store.state() == .locked)
        let loadError = await store.load(account: account).failure
        #expect(loadError?.code == .locked)
        // Attributes stay visible: an account that has no item is definitely absent.
        #expect(await store.load(account: TestTokens.account("absent")).success == .some(nil))
        #expect(await store.save(TestTokens.tokens("while-locked"), account: account).failure?.code == .locked)
        #expect(await store.delete(account: account).failure?.code == .locked)
        #expect(await store.delete(account: account, ifRefreshToken: tokens.refreshToken).failure?.code == .locked)
        #expect(try await store.accounts().get().contains(account))
        let bulk = try await store.loadAll().get()
        #expect(bulk.sessions[account] == nil)
        #expect(bulk.othersMayExist)
        for error in [loadError].compactMap({ $0 }) {
            let text = String(describing: error) + TokendError(error, account: account).message
            #expect(!text.contains(tokens.refreshToken))
            #expect(TokendError(error).code == .keyringLocked)
        }

        try keyring.unlock()

        #expect(await store.state() == .available)
        #expect(try await store.load(account: account).get() == tokens)
        #expect(try storedBySecretTool(account) == tokens)
    }

    @Test func keepsWorkingAcrossAKeyringRestart() async throws {
        let account = TestTokens.account("restart")
        let before = TestTokens.tokens("before")
        try await store.save(before, account: account).get()

        try keyring.restart()

        // libsecret still holds a proxy and a session of the old daemon: the store must notice
        // and reconnect on its own, on the first call.
        #expect(try await store.load(account: account).get() == before)
        let after = TestTokens.tokens("after")
        try await store.save(after, account: account).get()
        #expect(try storedBySecretTool(account) == after)

        try keyring.restart()
        try await store.save(before, account: account).get()
        #expect(try await store.load(account: account).get() == before)
        #expect(await store.state() == .available)
    }

    /// A login after a lock brings a new gnome-keyring (`gnome-keyring-daemon --unlock
    /// --replace`), as a restart does. The first call after it may be a write, and the new daemon
    /// hands out session paths of its own (secret-tool opens one here first): a secret sent under
    /// the old daemon's session must never be stored or refused.
    @Test func aWriteRightAfterANewKeyringTookOverIsStoredReadable() async throws {
        let account = TestTokens.account("replaced")
        for round in 0..<5 {
            try await store.save(TestTokens.tokens("before-\(round)"), account: account).get()
            try keyring.lock()
            #expect(await store.state() == .locked)
            try keyring.restart()
            _ = try keyring.secretTool(["store", "--label=other", "other-client", "\(round)"], stdin: "x").check()
            let after = TestTokens.tokens("after-\(round)")
            try await store.save(after, account: account).get()
            #expect(try storedBySecretTool(account) == after, "round \(round)")
        }
    }

    /// The keyring verbs every suite drives hold while a client keeps calling the Secret
    /// Service, as tokend polls a locked keyring: each call while no daemon serves has the bus
    /// activate a locked one. CI once lost an unlock to such a keyring (the verb replaced the
    /// daemon then, and the activated one took the name during the hand-over).
    @Test func lockUnlockStopAndRestartHoldWhileAClientPolls() async throws {
        let account = TestTokens.account("polled")
        let tokens = TestTokens.tokens("polled")
        try await store.save(tokens, account: account).get()
        // Two clients calling back to back, each on its own libsecret connection to the bus.
        let pollers = (0..<2).map { _ in
            Task.detached {
                let client = LibsecretStore(timeout: 1)
                var calls = 0
                while !Task.isCancelled {
                    _ = await client.state()
                    calls += 1
                }
                return calls
            }
        }
        for round in 0..<6 {
            try keyring.lock()
            #expect(await store.state() == .locked, "round \(round)")
            switch round % 3 {
            case 0: try keyring.unlock()
            case 1: try keyring.restart()
            default:
                keyring.stopKeyring()
                try keyring.unlock()
            }
            #expect(try await store.load(account: account).get() == tokens, "round \(round)")
        }
        var calls = 0
        for poller in pollers {
            poller.cancel()
            calls += await poller.value
        }
        #expect(calls > 0, "the clients called the Secret Service")
    }

    @Test func aKeyringThatDiedComesBackLockedThroughBusActivation() async throws {
        let account = TestTokens.account("died")
        let tokens = TestTokens.tokens("died")
        try await store.save(tokens, account: account).get()

        keyring.stopKeyring()

        // The bus starts a new gnome-keyring on demand; nobody gave it the password.
        #expect(await store.state() == .locked)
        #expect(await store.load(account: account).failure?.code == .locked)

        try keyring.restart()
        #expect(try await store.load(account: account).get() == tokens)
    }

    @Test func aServiceThatNeverAnswersTimesOut() async throws {
        let account = TestTokens.account("frozen")
        let tokens = TestTokens.tokens("frozen")
        try await store.save(tokens, account: account).get()
        // Deadline of the operations below: short, the answer we wait for is "no answer".
        let impatient = LibsecretStore(timeout: 0.5)

        try keyring.pauseKeyring()
        let load = await impatient.load(account: account)
        let state = await impatient.state()
        try keyring.resumeKeyring()

        #expect(load.failure?.code == .timedOut)
        // Not "unavailable" (issue 31): a service that does not answer may be waiting on a dialog.
        #expect(state == .needsConfirmation)
        #expect(TokendError(load.failure ?? KeyringError(.failed, "")).code == .keyringUnavailable)
        // The stuck calls were cancelled: the same store's thread is free for the next ones.
        let recovered = await eventually { try? await impatient.load(account: account).get() }
        #expect(recovered == tokens)
    }

    @Test func callsFromOneActorKeepTheirOrder() async throws {
        let writer = OrderedWriter(store: store)
        // Several rounds: an implementation that lets the actor run other work before it
        // enqueues may lose the race only now and then.
        for round in 0..<5 {
            let account = TestTokens.account("order-\(round)")
            let first = TestTokens.tokens("first")
            let second = TestTokens.tokens("second")

            try await writer.saveWithAnEarlierQueuedTask(account: account, fromTask: first, directly: second)

            // The direct call was enqueued before the actor let the task run; the task's came next.
            #expect(try await store.load(account: account).get() == first)
            _ = try await store.delete(account: account).get()
        }
    }
}

/// An actor that starts a save in a task (which can only run once this method suspends), then
/// saves directly. If calls enqueue before they suspend, the direct save is queued first.
actor OrderedWriter {
    let store: LibsecretStore

    init(store: LibsecretStore) { self.store = store }

    func saveWithAnEarlierQueuedTask(account: String, fromTask: TokenSet, directly: TokenSet) async throws {
        let task = Task { await store.save(fromTask, account: account) }
        try await store.save(directly, account: account).get()
        try await task.value.get()
    }
}
