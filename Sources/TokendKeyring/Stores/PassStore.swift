import Glibc
import TokendCore
import TokendSystem

/// Sessions in `pass`, the standard unix password manager: one entry per account,
/// `PREFIX/ACCOUNT` (`pass_prefix`, default `tokend/`), its content the account's token set as
/// JSON, encrypted by gpg to the store's keys. Everything goes through the `pass` command, so its
/// git integration and `PASSWORD_STORE_*` settings apply; the secret travels on stdin, never argv.
/// gpg runs with `--batch --pinentry-mode error`: a key that needs its passphrase fails at once
/// (a state with steps) instead of waiting on a prompt nobody sees.
extension QueuedStore {
    /// The `pass` store; `prefix` is read at each operation (a reload may change it).
    public static func pass(timeout: Double, prefix: @escaping @Sendable () -> String, environment: [String: String]? = nil) -> QueuedStore {
        // The queue's deadline is twice pass's own, so a killed run answers with pass's steps.
        QueuedStore(
            PassBackend(prefix: prefix, environment: environment ?? Environment.process().dictionary, timeout: timeout),
            kind: .pass, name: "tokend-pass", timeout: timeout * 2)
    }
}

/// The blocking half of the `pass` store, on its queue's thread.
struct PassBackend: BlockingStore {
    let prefix: @Sendable () -> String
    let environment: [String: String]
    /// Each `pass` run's deadline (the queue's own is twice this).
    let timeout: Double

    /// Where pass keeps its entries: `PASSWORD_STORE_DIR`, else ~/.password-store (pass's own rule).
    var storeDirectory: String {
        if let dir = environment["PASSWORD_STORE_DIR"], !dir.isEmpty { return dir.hasSuffix("/") ? String(dir.dropLast()) : dir }
        return (environment["HOME"] ?? "") + "/.password-store"
    }

    /// `PREFIX/ACCOUNT`, the entry's name in pass.
    func entry(_ account: String) -> String { folder + account }

    var folder: String {
        let prefix = prefix()
        return prefix.isEmpty || prefix.hasSuffix("/") ? prefix : prefix + "/"
    }

    /// gpg must never wait on a pinentry: batch mode, and a passphrase it needs is an error.
    var childEnvironment: [String: String] {
        var environment = self.environment
        let own = environment["PASSWORD_STORE_GPG_OPTS"].map { $0 + " " } ?? ""
        environment["PASSWORD_STORE_GPG_OPTS"] = own + "--batch --pinentry-mode error"
        return environment
    }

    func exists(_ account: String) -> Bool { access(storeDirectory + "/" + entry(account) + ".gpg", F_OK) == 0 }

    func read(account: String) -> Result<String?, KeyringError> {
        if let problem = storeProblem() { return .failure(problem) }
        guard exists(account) else { return .success(nil) }
        return run(["show", entry(account)]).map { String(decoding: $0, as: UTF8.self).trimmingTrailingNewlines }
    }

    func write(_ secret: String, account: String) -> Result<Void, KeyringError> {
        if let problem = storeProblem() { return .failure(problem) }
        return run(["insert", "--multiline", "--force", entry(account)], stdin: Array(secret.utf8)).map { _ in () }
    }

    func remove(account: String) -> Result<Bool, KeyringError> {
        if let problem = storeProblem() { return .failure(problem) }
        guard exists(account) else { return .success(false) }
        return run(["rm", "--force", entry(account)]).map { _ in true }
    }

    func accounts() -> Result<[String], KeyringError> {
        if let problem = storeProblem() { return .failure(problem) }
        guard let dir = opendir(storeDirectory + "/" + folder) else { return .success([]) }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name.hasSuffix(".gpg"), name.count > 4 { names.append(String(name.dropLast(4))) }
        }
        return .success(names)
    }

    /// Usable when one of our entries decrypts (or there is none yet and the store is set up).
    func probe() -> Result<Void, KeyringError> {
        if let problem = storeProblem() { return .failure(problem) }
        guard case .success(let names) = accounts(), let first = names.sorted().first else { return .success(()) }
        return read(account: first).map { _ in () }
    }

    /// A store that is not set up: pass would refuse every write.
    func storeProblem() -> KeyringError? {
        guard access(storeDirectory + "/.gpg-id", R_OK) == 0 else {
            return KeyringError(
                .unavailable, "no password store at \(storeDirectory) (no .gpg-id)",
                steps: "create it with `pass init GPG-KEY-ID` (and `pass git init` for history), or set PASSWORD_STORE_DIR in tokend's environment to the one you use (see README, \"Stores\")")
        }
        return nil
    }

    /// Runs `pass ARGUMENTS`; its stdout, or what its failure means.
    func run(_ arguments: [String], stdin: [UInt8] = []) -> Result<[UInt8], KeyringError> {
        let outcome: StoreCommand.Outcome
        switch StoreCommand.run(["pass"] + arguments, environment: childEnvironment, stdin: stdin, timeout: timeout) {
        case .success(let ran): outcome = ran
        case .failure(let failure):
            return .failure(KeyringError(
                .unavailable, "cannot run pass (errno \(failure.errno))",
                steps: "install pass (`apt-get install pass`) where tokend's PATH finds it"))
        }
        if outcome.status == 0 { return .success(outcome.stdout) }
        return .failure(Self.failure(of: outcome, entry: arguments.last ?? ""))
    }

    /// What a failed run of pass says about the store. gpg's messages never carry the secret.
    static func failure(of outcome: StoreCommand.Outcome, entry: String) -> KeyringError {
        let text = outcome.stderrText.singleLine
        let said = String(text.prefix(300))
        if outcome.timedOut || ["pinentry", "passphrase", "Inappropriate ioctl", "cancelled", "Operation cancelled"].contains(where: text.contains) {
            return KeyringError(
                .needsConfirmation, "gpg wants the passphrase of the password store's key, and tokend never waits on a prompt (pass: \(said))",
                steps: "unlock the key once in this login session (e.g. `pass show \(entry) >/dev/null` in a terminal), let gpg-agent keep it longer "
                    + "(default-cache-ttl and max-cache-ttl in gpg-agent.conf), or give this store a key without a passphrase (see README, \"Stores\")")
        }
        // gpg 2.2 with --pinentry-mode error says "No secret key" both for a key that is gone and
        // for one whose passphrase is not cached (seen here): the steps cover both.
        if ["No secret key", "No public key", "unusable public key", "skipped", "gpg-agent", "connection refused", "No such file"].contains(where: text.contains) {
            return KeyringError(
                .unavailable, "gpg cannot use the password store's key, or it needs its passphrase (pass: \(said))",
                steps: "check that `gpg --list-secret-keys` as tokend's user (GNUPGHOME as tokend sees it) lists the key in .gpg-id; "
                    + "if the key has a passphrase, unlock it once in this login session (`pass show \(entry) >/dev/null` in a terminal) "
                    + "or let gpg-agent keep it longer (default-cache-ttl, max-cache-ttl): tokend never waits on a prompt; "
                    + "then tokend writes back what it holds (see README, \"Stores\")")
        }
        return KeyringError(.failed, "pass failed with status \(outcome.status.map(String.init) ?? "none") (\(said))")
    }
}

extension String {
    fileprivate var trimmingTrailingNewlines: String {
        var text = self
        while text.last == "\n" { text.removeLast() }
        return text
    }
}
