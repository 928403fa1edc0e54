import Foundation
import Testing
import TokendCore
import TokendFakes
import TokendKeyring
import TokendProtocol
import TokendTestSupport

/// All three stores in one world: the private Secret Service of the harness, `pass` with a real
/// gpg key, and swtpm; the daemon is started for one of them and moves sessions between them.
final class MoveWorld: @unchecked Sendable {  // one test drives it at a time
    let world: DaemonHarness
    let pass: StoreFixture
    let tpm: StoreFixture

    init(world: DaemonHarness) throws {
        self.world = world
        pass = try StoreFixture(.pass, world: world)
        do {
            tpm = try StoreFixture(.tpm2, world: world)
        } catch {
            pass.tearDown()
            throw error
        }
    }

    /// What the daemon needs for every store at once (the session bus stays: secret-service).
    var environment: [String: String] { pass.daemonEnvironment.merging(["XDG_STATE_HOME": tpm.stateHome]) { $1 } }

    func configuration(store: StoreKind, accounts: String? = nil) -> String {
        "store = \"\(store.rawValue)\"\ntpm2_tcti = \"\(tpm.tpm?.tcti ?? "")\"\n" + (accounts ?? world.firebaseAccount("work"))
    }

    func startDaemon(store: StoreKind, extraEnvironment: [String: String] = [:]) async throws {
        try world.writeConfig(configuration(store: store))
        try await world.startDaemon(extraEnvironment: environment.merging(extraEnvironment) { $1 })
    }

    /// What the store holds for the account, read with its own tools; nil: nothing (or, for
    /// pass, an entry caught mid-rewrite, which a poll reads again).
    func stored(_ kind: StoreKind, _ account: String = "work") async throws -> TokenSet? {
        switch kind {
        case .secretService: try await world.storedSession(account)
        case .pass: await pass.storedSessionOnceReadable(account)
        case .tpm2: try await tpm.storedSession(account)
        }
    }

    /// Whether the store holds no copy of the account's session at all.
    func holdsNothing(_ kind: StoreKind, _ account: String = "work") async throws -> Bool {
        switch kind {
        case .secretService: try await world.storedSession(account) == nil
        case .pass: !FileManager.default.fileExists(atPath: "\(pass.pass!.storeDirectory)/tokend/\(account).gpg")
        case .tpm2: !FileManager.default.fileExists(atPath: "\(tpm.stateHome)/tokend/tpm2/\(account).session")
        }
    }

    func tearDown() {
        pass.tearDown()
        tpm.tearDown()
    }
}

func withMoveWorld<T>(options: FakeFirebase.Options = StoreTests.rotating, _ body: (MoveWorld) async throws -> T) async throws -> T {
    await MoveWorldSlots.shared.take()
    defer { Task { await MoveWorldSlots.shared.give() } }
    return try await withWorld(options: options, startDaemon: false) { world in
        let stores = try await offPool { try MoveWorld(world: world) }
        return try await withTearDown(stores, tearDown: { stores in _ = try? await offPool { stores.tearDown() } }, body)
    }
}

/// At most four move worlds at once: each starts swtpm, gpg-agent, a keyring and tokend, and all
/// 35 at once beside the rest of the suite (load ~33 on 2 cores) ran in-process suites past their
/// time limits; one at a time made the suite 25 minutes long.
actor MoveWorldSlots {
    static let shared = MoveWorldSlots()
    static let slots = 4
    var free = slots
    var waiting: [CheckedContinuation<Void, Never>] = []

    func take() async {
        if free > 0 {
            free -= 1
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    /// Hands the slot straight to the next waiter, if any, so that none is overtaken.
    func give() {
        if waiting.isEmpty { free += 1 } else { waiting.removeFirst().resume() }
    }
}

/// Issue 48, item 4: `tokenctl store move` between every pair of stores, with the real tokend,
/// tokenctl, swtpm, pass and gnome-keyring. A kill -9 after any step leaves the session readable
/// where tokend looks at its next start, served without a login, and the stored refresh token is
/// the newest; the old copy does not outlive the move.
/// At most four worlds at once (`MoveWorldSlots`).
@Suite struct StoreMoveTests {
    struct Pair: Sendable, CustomStringConvertible {
        var from: StoreKind
        var to: StoreKind
        var description: String { "\(from.rawValue)->\(to.rawValue)" }
    }

    static let pairs = StoreKind.allCases.flatMap { from in StoreKind.allCases.filter { $0 != from }.map { Pair(from: from, to: $0) } }

    /// tokend kills itself with SIGKILL after step 1…5 of the move (`MoveCrashPoint`), and starts
    /// again with the configuration unchanged: before the switch (steps 1–3) the session is where
    /// it was, from step 4 on where it was moved; either way served, rotated into that store, and
    /// the other store keeps no copy.
    @Test(arguments: pairs, 1...5)
    func aKillNineAfterAnyStepLosesNothing(_ pair: Pair, _ step: Int) async throws {
        try await withMoveWorld { stores in
            let world = stores.world
            try await stores.startDaemon(store: pair.from, extraEnvironment: [MoveCrashPoint.variable: "\(step)"])
            let session = try await world.importNewUser()
            try await poll("the import is stored in \(pair.from)") {
                try await stores.stored(pair.from)?.refreshToken == world.fake.newestRefreshToken(uid: session.uid)
            }
            let move = try await world.tokenctl(["store", "move", "work", "--to", pair.to.rawValue])
            #expect(move.status == 69, "tokend was to die after step \(step): \(move.status) \(move.stdout) \(move.stderr)")
            world.kill9()
            try await stores.startDaemon(store: pair.from)
            let home = step >= 4 ? pair.to : pair.from
            let other = step >= 4 ? pair.from : pair.to
            try await poll("served after the restart, without a login") { try await world.status().state == "active" }
            #expect(try await world.status().store == home.rawValue)
            let token = try await world.tokenctl(["token", "work"])
            #expect(token.status == 0, "\(token.stderr)")
            #expect(try await stores.stored(home)?.refreshToken == world.fake.newestRefreshToken(uid: session.uid))
            // A rotation now goes to the store tokend found the session in.
            #expect(try await world.tokenctl(["refresh", "work"]).status == 0)
            let newest = try #require(world.fake.newestRefreshToken(uid: session.uid))
            try await poll("the rotation is stored in \(home)") { try await stores.stored(home)?.refreshToken == newest }
            try await poll("no copy is left in \(other)") { try await stores.holdsNothing(other) }
            #expect(!world.daemonLog.contains("needs_login"))
        }
    }

    /// A move that runs to its end: one line on stdout, status names the new store and says a move
    /// put it there while the configuration names another, the old copy is gone, and after a
    /// restart the session is served from the new store; `--all` moves it back.
    @Test func aMoveAndItsWayBack() async throws {
        try await withMoveWorld { stores in
            let world = stores.world
            try await stores.startDaemon(store: .pass)
            let session = try await world.importNewUser()
            let move = try await world.tokenctl(["store", "move", "work", "--to", "tpm2"])
            #expect(move.status == 0 && move.stdout == "work: moved to tpm2 (active)\n" && move.stderr.isEmpty, "\(move)")
            let status = try await world.status()
            #expect(status.store == "tpm2")
            #expect(status.storeNote?.contains("the configuration says pass") == true, "\(status)")
            let table = try await world.tokenctl(["status"])
            #expect(table.stdout.contains("tpm2 (moved)"), "\(table.stdout)")
            #expect(try await stores.holdsNothing(.pass))
            #expect(try await stores.stored(.tpm2)?.refreshToken == world.fake.newestRefreshToken(uid: session.uid))
            let again = try await world.tokenctl(["store", "move", "work", "--to", "tpm2"])
            #expect(again.status == 0 && again.stdout == "work: already in tpm2 (active)\n", "\(again)")
            world.kill9()
            try await stores.startDaemon(store: .pass)
            try await poll("served from tpm2 after a restart") { try await world.status().state == "active" }
            #expect(try await world.status().store == "tpm2")
            let back = try await world.tokenctl(["store", "move", "--all", "--to", "pass"])
            #expect(back.status == 0, "\(back)")
            #expect(try await world.status().storeNote == nil, "back where the configuration says")
            #expect(try await stores.holdsNothing(.tpm2))
            let record = try String(contentsOfFile: stores.tpm.stateHome + "/tokend/stores.json", encoding: .utf8)
            #expect(!record.contains(session.refreshToken), "the record holds store names only")
            let attributes = try FileManager.default.attributesOfItem(atPath: stores.tpm.stateHome + "/tokend/stores.json")
            #expect((attributes[.posixPermissions] as? Int) == 0o600)
        }
    }

    /// A refresh in flight when the move starts: its rotation reaches the old store first, and
    /// the move copies the rotated session, not the one it replaced.
    @Test func aRotationDuringTheMoveIsWhatMoves() async throws {
        try await withMoveWorld { stores in
            let world = stores.world
            try await stores.startDaemon(store: .secretService)
            let session = try await world.importNewUser()
            // The next provider call answers after 5 s: the refresh is in flight while the move starts.
            world.fake.faults.inject(.delay(5), count: 1)
            async let refreshed = world.tokenctl(["refresh", "work"])
            try await poll("the refresh is in flight") { try await world.status().state == "refreshing" }
            let move = try await world.tokenctl(["store", "move", "work", "--to", "pass"])
            #expect(move.status == 0, "\(move)")
            #expect(try await refreshed.status == 0)
            let newest = try #require(world.fake.newestRefreshToken(uid: session.uid))
            #expect(newest != session.refreshToken, "the provider rotated")
            try await poll("the rotated token is in pass") { try await stores.stored(.pass)?.refreshToken == newest }
            #expect(try await stores.holdsNothing(.secretService))
            world.kill9()
            try await stores.startDaemon(store: .secretService)
            try await poll("served from pass after a restart") { try await world.status().state == "active" }
            #expect(try await world.tokenctl(["token", "work"]).status == 0)
        }
    }

    /// The old store fails while the daemon runs (the keyring locked): the session held in
    /// memory moves to a store that works (saved there, no longer `unsaved`), and the old copy,
    /// which the locked keyring would not let go, is removed once it is unlocked.
    @Test func aSessionMovesAwayFromAStoreThatFailed() async throws {
        try await withMoveWorld { stores in
            let world = stores.world
            try await stores.startDaemon(store: .secretService)
            let session = try await world.importNewUser()
            try await offPool { try world.keyring.lock() }
            #expect(try await world.tokenctl(["refresh", "work"]).status == 0)
            try await poll("unsaved in memory") { try await world.status().unsaved == true }
            let move = try await world.tokenctl(["store", "move", "work", "--to", "tpm2"])
            #expect(move.status == 0, "\(move)")
            #expect(move.stderr.contains("old copy in secret-service could not be removed") && move.stderr.split(separator: "\n").count == 1, "\(move.stderr)")
            let newest = try #require(world.fake.newestRefreshToken(uid: session.uid))
            #expect(try await stores.stored(.tpm2)?.refreshToken == newest)
            let status = try await world.status()
            #expect(status.unsaved == nil && status.keyring == "available" && status.store == "tpm2", "\(status)")
            try await offPool { try world.keyring.unlock() }
            try await poll("the old copy is removed once the keyring is unlocked") { try await stores.holdsNothing(.secretService) }
        }
    }

    /// What the user gets wrong, and a store that cannot take the session: one stderr line each,
    /// DESIGN's exit codes, and the session stays where it was.
    @Test func refusalsSayWhatToDo() async throws {
        try await withMoveWorld { stores in
            let world = stores.world
            try await stores.startDaemon(store: .pass)
            let session = try await world.importNewUser()
            for (arguments, status) in [
                (["store", "move", "nobody", "--to", "tpm2"], Int32(67)),
                (["store", "move", "work", "--to", "floppy"], 64),
                (["store", "move", "--to", "tpm2"], 64),
                (["store", "move", "work", "--all", "--to", "tpm2"], 64),
            ] {
                let run = try await world.tokenctl(arguments)
                #expect(run.status == status, "\(arguments): \(run)")
                #expect(run.stderr.split(separator: "\n").count == 1 && run.stderr.hasPrefix("tokenctl: "), "\(arguments): \(run.stderr)")
            }
            try await offPool { stores.tpm.tpm?.stop() }
            let refused = try await world.tokenctl(["store", "move", "work", "--to", "tpm2"])
            #expect(refused.status == 75, "\(refused)")
            #expect(refused.stderr.split(separator: "\n").count == 1 && refused.stderr.contains("stays where it was") && refused.stderr.contains("tpm2_getrandom"), "\(refused.stderr)")
            #expect(try await world.status().store == "pass")
            #expect(try await stores.stored(.pass)?.refreshToken == world.fake.newestRefreshToken(uid: session.uid))
            #expect(try await world.tokenctl(["token", "work"]).status == 0)
        }
    }

    /// Each account shows its own store's state (issue 48): pass failing is the state of pass's
    /// account only, and the tpm2 account beside it stays available and keeps being written.
    @Test func eachAccountShowsItsOwnStoresState() async throws {
        try await withMoveWorld { stores in
            let world = stores.world
            let accounts = world.firebaseAccount("work") + "\n" + world.firebaseAccount("home") + "\nstore = \"pass\"\n"
            try world.writeConfig(stores.configuration(store: .tpm2, accounts: accounts))
            try await world.startDaemon(extraEnvironment: stores.environment)
            try await world.importNewUser(into: "work")
            try await world.importNewUser(into: "home")
            try await offPool { try stores.pass.makeUnusable() }
            #expect(try await world.tokenctl(["refresh", "home"]).status == 0)
            try await poll("home's store is reported unusable") {
                let home = try await world.status("home")
                return home.keyring != "available" && home.unsaved == true
            }
            let work = try await world.status("work")
            #expect(work.keyring == "available" && work.unsaved == nil, "\(work)")
            #expect(try await world.tokenctl(["refresh", "work"]).status == 0)
            #expect(try await world.status("work").keyring == "available")
            #expect(try await world.status("home").keyring != "available", "one store's success is not another's")
            try await offPool { try stores.pass.makeUsable() }
            try await poll("home is written back once pass answers") { try await world.status("home").unsaved == nil }
        }
    }
}
