import Foundation
import Testing
import TokendCore
import TokendFakes
import TokendProtocol
import TokendTestSupport

/// Issue 48, item 6: each store against the real pieces (a private gnome-keyring; gpg and pass in
/// a throw-away GNUPGHOME; the swtpm TPM 2.0 simulator), with the real tokend and tokenctl. The
/// Secret Service's finer checks are KeyringMoodTests, KeyringAtStartTests and CrashTests.
@Suite struct StoreTests {
    static var rotating: FakeFirebase.Options {
        var options = FakeFirebase.Options()
        options.rotate = true
        return options
    }

    /// Import, a rotation, kill -9, restart: served without a login, and the stored refresh
    /// token is the newest the provider issued.
    @Test(arguments: StoreFixture.Kind.allCases)
    func killAndRestartKeepsTheNewestToken(_ kind: StoreFixture.Kind) async throws {
        try await withStore(kind, options: Self.rotating) { store in
            try await store.startDaemon()
            let world = store.world
            let session = try await world.importNewUser()
            // The import's first refresh may already have rotated it.
            try await poll("the import is stored") { await store.storedSessionOnceReadable()?.refreshToken == world.fake.newestRefreshToken(uid: session.uid) }
            #expect(try await world.tokenctl(["refresh", "work"]).status == 0)
            let newest = try #require(world.fake.newestRefreshToken(uid: session.uid))
            #expect(newest != session.refreshToken, "the provider rotated")
            try await poll("the rotated token is stored") { await store.storedSessionOnceReadable()?.refreshToken == newest }
            world.kill9()
            try await world.startDaemon(extraEnvironment: store.daemonEnvironment)
            try await poll("served after the restart") { try await world.status().state == "active" }
            // `status` names the account's store, on the wire and in tokenctl's table.
            #expect(try await world.status().store == kind.rawValue)
            let table = try await world.tokenctl(["status"])
            #expect(table.status == 0 && table.stdout.contains(" \(kind.rawValue) "), "\(table.stdout)")
            let token = try await world.tokenctl(["token", "work"])
            #expect(token.status == 0, "\(token.stderr)")
            #expect(try await store.storedSession()?.refreshToken == world.fake.newestRefreshToken(uid: session.uid))
            if kind == .pass {
                #expect(try store.pass!.commits() >= 2, "pass's git integration recorded the writes")
            }
        }
    }

    /// The store goes away while the daemon runs and a rotation happens: the token is served
    /// from memory, status and the log say what to do, and the session is written back once the
    /// store is back — without waiting for another refresh.
    @Test(arguments: StoreFixture.Kind.allCases)
    func unusableWhileRunningThenWrittenBack(_ kind: StoreFixture.Kind) async throws {
        try await withStore(kind, options: Self.rotating) { store in
            try await store.startDaemon()
            let world = store.world
            let session = try await world.importNewUser()
            try await offPool { try store.makeUnusable() }
            #expect(try await world.tokenctl(["refresh", "work"]).status == 0)
            #expect(try await world.tokenctl(["token", "work"]).status == 0, "served from memory")
            try await poll("the store is reported unusable") {
                let status = try await world.status()
                return status.keyring != "available" && status.unsaved == true
            }
            #expect(world.daemonLog.contains(store.unusableLogLine), "\(world.daemonLog)")
            let requests = world.fake.requests.count
            try await offPool { try store.makeUsable() }
            let newest = try #require(world.fake.newestRefreshToken(uid: session.uid))
            try await poll("written back once the store is usable") { await store.storedSessionOnceReadable()?.refreshToken == newest }
            #expect(world.fake.requests.count == requests, "written back without a refresh")
            try await poll("status clears") { try await world.status().unsaved == nil }
        }
    }

    /// tokend starts while the store cannot be used: no needs_login and no hang; `token` says
    /// try later; once the store is back the stored session is served.
    @Test(arguments: StoreFixture.Kind.allCases)
    func restartWhileUnusableWaitsForTheStore(_ kind: StoreFixture.Kind) async throws {
        try await withStore(kind) { store in
            try await store.startDaemon()
            let world = store.world
            try await world.importNewUser()
            world.stopDaemon()
            try await offPool { try store.makeUnusable() }
            try await world.startDaemon(extraEnvironment: store.daemonEnvironment)
            try await poll("the account waits for the store") { try await world.status().state == "waiting_for_keyring" }
            try await poll("status and the log say the store is unusable, and what to do") {
                try await world.status().keyring != "available" && world.daemonLog.contains(store.unusableLogLine)
            }
            let token = try await world.tokenctl(["token", "work"])
            #expect(token.status == 75, "\(token.stderr)")
            #expect(!world.daemonLog.contains("needs_login"))
            try await offPool { try store.makeUsable() }
            try await poll("served once the store is back") { try await world.status().state == "active" }
            #expect(try await world.tokenctl(["token", "work"]).status == 0)
        }
    }

    /// Logout removes the session from the store.
    @Test(arguments: StoreFixture.Kind.allCases)
    func logoutRemovesTheSession(_ kind: StoreFixture.Kind) async throws {
        try await withStore(kind) { store in
            try await store.startDaemon()
            try await store.world.importNewUser()
            #expect(try await store.storedSession() != nil)
            let logout = try await store.world.tokenctl(["logout", "work"])
            #expect(logout.status == 0, "\(logout.stderr)")
            try await poll("the stored session is removed") { try await store.storedSession() == nil }
        }
    }

    /// The tokens never reach a file outside the store's ciphertext, pass's argv, or the log.
    @Test(arguments: StoreFixture.Kind.allCases)
    func canariesStayInTheStore(_ kind: StoreFixture.Kind) async throws {
        try await withStore(kind, options: Self.rotating) { store in
            try await store.startDaemon()
            let world = store.world
            let session = try await world.importNewUser()
            #expect(try await world.tokenctl(["refresh", "work"]).status == 0)
            let newest = try #require(world.fake.newestRefreshToken(uid: session.uid))
            try await poll("stored") { await store.storedSessionOnceReadable()?.refreshToken == newest }
            world.stopDaemon()
            let canaries = [session.refreshToken, newest]
            var scanned = 0
            for root in store.scannedRoots {
                let files = FileManager.default.enumerator(atPath: root)?.compactMap { $0 as? String } ?? []
                for file in files {
                    let path = root + "/" + file
                    guard !store.isStoreCiphertext(path), let data = FileManager.default.contents(atPath: path) else { continue }
                    scanned += 1
                    let text = String(decoding: data, as: UTF8.self)
                    for canary in canaries { #expect(!text.contains(canary), "a token in \(path)") }
                }
            }
            #expect(scanned > 0)
            if kind == .pass {
                let argv = try String(contentsOfFile: store.argvLog, encoding: .utf8)
                #expect(argv.contains("insert --multiline --force tokend/work"), "the shim saw pass run: \(argv)")
            }
        }
    }

    /// A session sealed by one TPM does not decrypt under another (the files copied to another
    /// machine): a state with steps, not needs_login; back on its own TPM it is served again.
    @Test func aSessionSealedByOneTPMDoesNotOpenUnderAnother() async throws {
        try await withStore(.tpm2) { store in
            try await store.startDaemon()
            let world = store.world
            let session = try await world.importNewUser()
            world.stopDaemon()
            let other = SoftTPM(stateDirectory: world.keyring.root.appendingPathComponent("tpm-b").path)
            try await offPool { try other.start() }
            defer { other.stop() }
            let foreign = await other.storedSession(stateHome: store.stateHome)
            guard case .failure(let error) = foreign else { Issue.record("another TPM read the session: \(foreign)"); return }
            #expect(error.message.contains("not sealed by this TPM"), "\(error)")
            try world.writeConfig("store = \"tpm2\"\ntpm2_tcti = \"\(other.tcti)\"\n" + world.firebaseAccount("work"))
            try await world.startDaemon(extraEnvironment: store.daemonEnvironment)
            try await poll("the account waits for its TPM") { try await world.status().state == "waiting_for_keyring" }
            try await poll("the store is reported unusable, with its steps") {
                try await world.status().keyring == "unavailable" && world.daemonLog.contains("not sealed by this TPM")
            }
            #expect(!world.daemonLog.contains("needs_login"))
            world.stopDaemon()
            try await store.startDaemon()
            try await poll("served on its own TPM") { try await world.status().state == "active" }
            #expect(try await store.storedSession()?.refreshToken == session.refreshToken)
        }
    }

    /// A session file renamed to another account does not decrypt: the account name is in the
    /// AEAD's associated data.
    @Test func aRenamedSessionFileDoesNotDecrypt() async throws {
        try await withStore(.tpm2) { store in
            try await store.startDaemon()
            try await store.world.importNewUser()
            store.world.stopDaemon()
            let directory = store.stateHome + "/tokend/tpm2"
            for (path, mode) in [(store.stateHome + "/tokend", 0o700), (directory, 0o700), (directory + "/work.session", 0o600), (directory + "/key.sealed", 0o600)] {
                let attributes = try FileManager.default.attributesOfItem(atPath: path)
                #expect((attributes[.posixPermissions] as? Int) == mode, "\(path)")
            }
            try FileManager.default.copyItem(atPath: directory + "/work.session", toPath: directory + "/other.session")
            let read = await store.tpm!.storedSession("other", stateHome: store.stateHome)
            guard case .failure(let error) = read else { Issue.record("the renamed file decrypted: \(read)"); return }
            #expect(error.code == .corrupt)
            #expect(try await store.storedSession("work") != nil, "the original still decrypts")
        }
    }
}
