import Foundation
import TokendCore
import TokendFakes
import TokendKeyring
import TokendTestSupport

/// One store under test (issue 48, item 6): how the daemon is configured for it, how a test reads
/// what it holds, and how the test makes it unusable and usable again. The Secret Service (the
/// world's private gnome-keyring) runs the same checks as the two headless stores.
final class StoreFixture: @unchecked Sendable {  // one test drives it at a time
    enum Kind: String, CaseIterable, Sendable, CustomStringConvertible {
        case secretService = "secret-service", pass, tpm2
        var description: String { rawValue }
    }

    let kind: Kind
    let world: DaemonHarness
    private(set) var pass: PassWorld?
    private(set) var tpm: SoftTPM?
    /// Every argv the daemon ran `pass` with, one per line: a PATH shim records them.
    var argvLog: String { world.keyring.root.appendingPathComponent("pass-argv.log").path }
    var stateHome: String { world.keyring.root.appendingPathComponent("state").path }
    var shimDirectory: String { world.keyring.root.appendingPathComponent("shim").path }

    init(_ kind: Kind, world: DaemonHarness, passphrase: String? = nil) throws {
        self.kind = kind
        self.world = world
        switch kind {
        case .secretService: break
        case .pass:
            pass = try PassWorld.start(base: world.keyring.childEnvironment, passphrase: passphrase)
            try FileManager.default.createDirectory(atPath: shimDirectory, withIntermediateDirectories: true)
            let shim = shimDirectory + "/pass"
            try "#!/bin/sh\nprintf '%s\\n' \"$*\" >>'\(argvLog)'\nexec /usr/bin/pass \"$@\"\n".write(toFile: shim, atomically: true, encoding: .utf8)
            chmod(shim, 0o755)
        case .tpm2:
            let tpm = SoftTPM(stateDirectory: world.keyring.root.appendingPathComponent("tpm-a").path)
            try tpm.start()
            self.tpm = tpm
        }
    }

    /// The configuration's top-level lines for this store.
    var configHeader: String {
        switch kind {
        case .secretService: "store = \"secret-service\"\n"
        case .pass: "store = \"pass\"\n"
        case .tpm2: "store = \"tpm2\"\ntpm2_tcti = \"\(tpm?.tcti ?? "")\"\n"
        }
    }

    /// What the daemon needs in its environment; `tpm2` gets no session bus at all.
    var daemonEnvironment: [String: String] {
        switch kind {
        case .secretService: return [:]
        case .pass:
            var environment = pass?.environment ?? [:]
            environment["PATH"] = shimDirectory + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
            return environment
        case .tpm2:
            return ["XDG_STATE_HOME": stateHome, "DBUS_SESSION_BUS_ADDRESS": "unix:path=/nonexistent/bus"]
        }
    }

    /// Writes the configuration (this store, one Firebase account `work`) and starts tokend.
    func startDaemon() async throws {
        try world.writeConfig(configHeader + world.firebaseAccount("work"))
        try await world.startDaemon(extraEnvironment: daemonEnvironment)
    }

    /// For a poll that waits on a write: what the store holds, nil while a read fails. `pass`
    /// rewrites an entry's file in place (gpg -o), so a read racing tokend's write sees a torn
    /// file ("encrypted message has been manipulated"), as a user's `pass show` would.
    func storedSessionOnceReadable(_ account: String = "work") async -> TokenSet? {
        (try? await storedSession(account)) ?? nil
    }

    /// What the store holds for the account, read with the store's own tools (pass; the TPM).
    func storedSession(_ account: String = "work") async throws -> TokenSet? {
        switch kind {
        case .secretService: return try await world.storedSession(account)
        case .pass: return try pass?.storedSession(account)
        case .tpm2:
            guard let tpm else { return nil }
            return try await tpm.storedSession(account, stateHome: stateHome).get()
        }
    }

    /// The keyring is locked; gpg loses its key; the TPM simulator stops.
    func makeUnusable() throws {
        switch kind {
        case .secretService: try world.keyring.lock()
        case .pass: try pass?.hideKeys()
        case .tpm2: tpm?.stop()
        }
    }

    func makeUsable() throws {
        switch kind {
        case .secretService: try world.keyring.unlock()
        case .pass: try pass?.restoreKeys()
        case .tpm2: try tpm?.start()
        }
    }

    /// What the daemon's log says once the store cannot be used (AccountNarrator).
    var unusableLogLine: String {
        kind == .secretService ? "is locked and nothing here has unlocked it" : "session store unusable"
    }

    /// Files the store keeps the session in (encrypted), left out of the canary scan.
    func isStoreCiphertext(_ path: String) -> Bool {
        switch kind {
        case .secretService: path.hasSuffix(".keyring")
        case .pass: path.hasSuffix(".gpg")
        case .tpm2: path.hasSuffix(".session")
        }
    }

    /// Every regular file a canary could leak into: the world's folders and the store's own.
    var scannedRoots: [String] { [world.keyring.root.path] + (pass.map { [$0.root] } ?? []) }

    func tearDown() {
        tpm?.stop()
        pass?.stop()
    }
}

/// The store's world for the length of `body`: the daemon is not started yet.
func withStore<T>(
    _ kind: StoreFixture.Kind, options: FakeFirebase.Options = .init(), passphrase: String? = nil, _ body: (StoreFixture) async throws -> T
) async throws -> T {
    try await withWorld(options: options, startDaemon: false) { world in
        let fixture = try await offPool { try StoreFixture(kind, world: world, passphrase: passphrase) }
        return try await withTearDown(fixture, tearDown: { fixture in _ = try? await offPool { fixture.tearDown() } }, body)
    }
}
