import Foundation
import TokendCore
import TokendKeyring
import TokendTestSupport

/// A throw-away gnupg home with a real key and a real `pass` store initialised for it (with git),
/// for the `pass` store's tests (recipes: "pass + gnupg, fast").
final class PassWorld: Sendable {
    let root: String
    var gnupgHome: String { root + "/g" }
    var storeDirectory: String { root + "/store" }
    var environment: [String: String] { ["GNUPGHOME": gnupgHome, "PASSWORD_STORE_DIR": storeDirectory] }
    let base: [String: String]

    init(root: String, base: [String: String]) {
        self.root = root
        self.base = base
    }

    /// `base` is the rest of the children's environment (the private session's).
    /// With `passphrase`, the key has one (made through loopback pinentry, which only tests allow).
    static func start(base: [String: String], passphrase: String? = nil) throws -> PassWorld {
        // Short: gpg-agent's socket lives in GNUPGHOME, and a Unix socket path has 107 bytes at most.
        let root = try TemporaryDirectory(prefix: "tkpass", in: "/tmp").path
        let world = PassWorld(root: root, base: base)
        try FileManager.default.createDirectory(atPath: world.gnupgHome, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        // Key generation in 0.1 s instead of 8 s (recipes.md).
        try "s2k-count 65536\nallow-loopback-pinentry\n".write(toFile: world.gnupgHome + "/gpg-agent.conf", atomically: true, encoding: .utf8)
        try world.run(
            "/usr/bin/gpg",
            ["--batch", "--pinentry-mode", "loopback", "--passphrase", passphrase ?? "", "--quick-gen-key", "tokend test <test@example.invalid>", "default", "default", "never"])
        let listed = try world.run("/usr/bin/gpg", ["--batch", "--with-colons", "--list-secret-keys"])
        guard let fingerprint = listed.stdout.split(separator: "\n").first(where: { $0.hasPrefix("fpr:") })?.split(separator: ":", omittingEmptySubsequences: false).dropFirst(9).first else {
            throw HarnessError("no key fingerprint in gpg's listing:\n\(listed.stdout)")
        }
        try world.run("/usr/bin/pass", ["init", String(fingerprint)])
        try world.run("/usr/bin/pass", ["git", "init"])
        // The private home has no git identity: the store's own, so pass's commits happen.
        try world.run("/usr/bin/pass", ["git", "config", "user.name", "tokend test"])
        try world.run("/usr/bin/pass", ["git", "config", "user.email", "test@example.invalid"])
        return world
    }

    @discardableResult
    func run(_ path: String, _ arguments: [String], stdin: String? = nil) throws -> ChildProcess.Result {
        let result = try ChildProcess.run(path, arguments, environment: base.merging(environment) { $1 }, stdin: stdin)
        guard result.status == 0 else { throw HarnessError("\(path) \(arguments.joined(separator: " ")) failed (\(result.status)): \(result.stderr)") }
        return result
    }

    /// The account's entry as pass shows it, nil when there is none.
    func storedSession(_ account: String = "work") throws -> TokenSet? {
        guard FileManager.default.fileExists(atPath: "\(storeDirectory)/tokend/\(account).gpg") else { return nil }
        return try TokenSet(keyringJSON: run("/usr/bin/pass", ["show", "tokend/\(account)"]).stdout)
    }

    /// How many commits pass's git integration made.
    func commits() throws -> Int {
        try run("/usr/bin/git", ["-C", storeDirectory, "rev-list", "--count", "HEAD"]).stdout.split(separator: "\n").first.flatMap { Int($0) } ?? 0
    }

    /// The key is gone for gpg (keyring files moved aside, agent stopped): reads and writes fail.
    func hideKeys() throws {
        _ = try? run("/usr/bin/gpgconf", ["--kill", "gpg-agent"])
        for name in ["pubring.kbx", "private-keys-v1.d"] {
            try FileManager.default.moveItem(atPath: "\(gnupgHome)/\(name)", toPath: "\(root)/\(name).aside")
        }
    }

    func restoreKeys() throws {
        _ = try? run("/usr/bin/gpgconf", ["--kill", "gpg-agent"])
        for name in ["pubring.kbx", "private-keys-v1.d"] {
            // gpg makes empty ones in their place when asked meanwhile.
            try? FileManager.default.removeItem(atPath: "\(gnupgHome)/\(name)")
            try FileManager.default.moveItem(atPath: "\(root)/\(name).aside", toPath: "\(gnupgHome)/\(name)")
        }
    }

    /// gpg-agent forgets every cached passphrase: the key needs the user again.
    func forgetPassphrase() throws { try run("/usr/bin/gpgconf", ["--reload", "gpg-agent"]) }

    /// The user unlocks the key once (what `pass show` in a terminal does), through loopback.
    func unlock(_ passphrase: String, account: String = "work") throws {
        try run("/usr/bin/gpg", ["--batch", "--pinentry-mode", "loopback", "--passphrase", passphrase, "--decrypt", "--output", "/dev/null",
                                 "\(storeDirectory)/tokend/\(account).gpg"])
    }

    func stop() {
        _ = try? run("/usr/bin/gpgconf", ["--kill", "gpg-agent"])
        try? FileManager.default.removeItem(atPath: root)
    }
}

/// A real TPM 2.0 simulator (swtpm) on loopback TCP, its state in `stateDirectory`: stopped and
/// started again on the same directory it is the same TPM (as across a reboot); another
/// directory is another machine's TPM.
final class SoftTPM: @unchecked Sendable {  // one test drives it at a time
    let stateDirectory: String
    private(set) var port = 0
    private var pid: pid_t?

    init(stateDirectory: String) {
        self.stateDirectory = stateDirectory
    }

    var tcti: String { "swtpm:host=127.0.0.1,port=\(port)" }

    /// Starts swtpm on a free pair of ports (it takes P and P+1), trying a few in case P+1 is taken.
    func start() throws {
        try FileManager.default.createDirectory(atPath: stateDirectory, withIntermediateDirectories: true)
        for _ in 0..<10 {
            if port == 0 {
                let (fd, free) = try LoopbackSocket.listen()
                close(fd)
                port = free
            }
            let started = try ChildProcess.start(
                "/usr/bin/swtpm",
                ["socket", "--tpm2", "--tpmstate", "dir=\(stateDirectory)", "--server", "type=tcp,port=\(port),bindaddr=127.0.0.1",
                 "--ctrl", "type=tcp,port=\(port + 1),bindaddr=127.0.0.1", "--flags", "not-need-init,startup-clear"],
                environment: ProcessInfo.processInfo.environment, output: stateDirectory + "/swtpm.log")
            let answering = (try? awaitPort()) ?? false
            if answering, ChildProcess.exitStatusIfEnded(started) == nil {
                pid = started
                return
            }
            if ChildProcess.exitStatusIfEnded(started) == nil { ChildProcess.stop(started) }
            port = 0
        }
        throw HarnessError("swtpm did not start; see \(stateDirectory)/swtpm.log")
    }

    /// Whether the TPM port takes connections within the patience deadline.
    private func awaitPort() throws -> Bool {
        let deadline = Date().addingTimeInterval(Patience.seconds)
        while Date() < deadline {
            if let fd = try? LoopbackSocket.connect(port: port) {
                close(fd)
                return true
            }
            usleep(50_000)  // polling for a port to open, with a deadline
        }
        return false
    }

    /// SIGTERM: swtpm keeps its state on disk, as a TPM keeps its seeds across a power cycle.
    func stop() {
        guard let pid else { return }
        _ = try? ChildProcess.terminate(pid)
        self.pid = nil
    }

    /// The same TPM again on the same port.
    func restart() throws {
        stop()
        try start()
    }

    /// Reads the account's session as the daemon would (the store's own code, this TPM).
    func storedSession(_ account: String = "work", stateHome: String) async -> Result<TokenSet?, KeyringError> {
        let store = QueuedStore.tpm2(timeout: 30, tcti: { [tcti] in tcti }, environment: ["XDG_STATE_HOME": stateHome])
        return await store.load(account: account)
    }
}
