import CTokendTPM2
import Crypto
import Glibc
import TokendCore
import TokendSystem
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Sessions sealed to this machine's TPM 2.0: each account's token set AES-256-GCM-encrypted in
/// its own file under `$XDG_STATE_HOME/tokend/tpm2/`, under one key that only this TPM can unseal
/// (a sealed data object under the owner hierarchy's primary key, as systemd-creds and clevis
/// do). The account's name and the session's endpoint are the AEAD's associated data, so a file
/// renamed to another account does not decrypt. No D-Bus, no keyring, no password file.
/// The TPM is asked for the key at every operation: nothing of it stays in the daemon's memory,
/// and a TPM that is gone is noticed as such (a state with steps, never a plaintext fall-back).
extension QueuedStore {
    /// The `tpm2` store; `tcti` is read at each operation (nil: `TPM2TOOLS_TCTI`, else tpm2-tss's
    /// default). `environment` gives `XDG_STATE_HOME` and `HOME` (the process's by default).
    public static func tpm2(timeout: Double, tcti: @escaping @Sendable () -> String?, environment: [String: String]? = nil) -> QueuedStore {
        let environment = environment ?? Environment.process().dictionary
        return QueuedStore(
            TPM2Backend(directory: TPM2Backend.directory(environment), tcti: { tcti() ?? environment["TPM2TOOLS_TCTI"] }),
            kind: .tpm2, name: "tokend-tpm2", timeout: timeout)
    }
}

/// The blocking half of the `tpm2` store, on its queue's thread.
struct TPM2Backend: BlockingStore {
    let directory: String
    let tcti: @Sendable () -> String?

    /// `$XDG_STATE_HOME/tokend/tpm2`, `~/.local/state/tokend/tpm2` without it (XDG's default).
    static func directory(_ environment: [String: String]) -> String { StoreRecordFile.stateDirectory(environment) + "/tpm2" }

    static let sessionSuffix = ".session"
    /// The sealed key's file: the TPM's public and private parts of the object, useless elsewhere.
    var keyPath: String { directory + "/key.sealed" }
    func path(_ account: String) -> String { directory + "/" + account + Self.sessionSuffix }

    /// The first line of a session file: the format, so a later one can be told apart.
    static let magic = "tokend-tpm2 1"

    func read(account: String) -> Result<String?, KeyringError> {
        let contents: [UInt8]
        switch SealedFiles.read(path(account)) {
        case .success(nil): return .success(nil)
        case .success(let bytes?): contents = bytes
        case .failure(let error): return .failure(error)
        }
        let lines = String(decoding: contents, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
        guard lines.count >= 3, lines[0] == Self.magic, let endpoint = Data(base64Encoded: String(lines[1])),
              let sealed = Data(base64Encoded: String(lines[2])) else {
            return .failure(KeyringError(.corrupt, "\(path(account)) is not a session file tokend wrote"))
        }
        let key: SymmetricKey
        switch unsealKey(create: false) {
        case .success(let found?): key = found
        case .success(nil): return .failure(KeyringError(.corrupt, "\(path(account)) has no sealed key beside it (\(keyPath))"))
        case .failure(let error): return .failure(error)
        }
        do {
            let box = try AES.GCM.SealedBox(combined: sealed)
            let plain = try AES.GCM.open(box, using: key, authenticating: Self.associatedData(account: account, endpoint: endpoint))
            return .success(String(decoding: plain, as: UTF8.self))
        } catch {
            return .failure(KeyringError(.corrupt, "\(path(account)) does not decrypt for account \"\(account)\" (renamed, or from another key)"))
        }
    }

    func write(_ secret: String, account: String) -> Result<Void, KeyringError> {
        let key: SymmetricKey
        switch unsealKey(create: true) {
        case .success(let found?): key = found
        case .success(nil): return .failure(KeyringError(.failed, "no sealed key"))
        case .failure(let error): return .failure(error)
        }
        let endpoint = Data(((try? TokenSet(keyringJSON: secret))?.endpoint ?? "").utf8)
        do {
            let sealed = try AES.GCM.seal(Data(secret.utf8), using: key, authenticating: Self.associatedData(account: account, endpoint: endpoint))
            guard let combined = sealed.combined else { return .failure(KeyringError(.failed, "AES-GCM gave no sealed box")) }
            let text = "\(Self.magic)\n\(endpoint.base64EncodedString())\n\(combined.base64EncodedString())\n"
            return SealedFiles.write(Array(text.utf8), to: path(account), directory: directory)
        } catch {
            return .failure(KeyringError(.failed, "AES-GCM refused to encrypt"))
        }
    }

    /// "tokend-tpm2 1", the account, the endpoint, NUL-separated (neither name holds a NUL).
    static func associatedData(account: String, endpoint: Data) -> Data {
        Data(magic.utf8) + Data([0]) + Data(account.utf8) + Data([0]) + endpoint
    }

    func remove(account: String) -> Result<Bool, KeyringError> { SealedFiles.remove(path(account), directory: directory) }

    func accounts() -> Result<[String], KeyringError> {
        .success(SealedFiles.names(in: directory).compactMap { $0.hasSuffix(Self.sessionSuffix) ? String($0.dropLast(Self.sessionSuffix.count)) : nil })
    }

    /// Usable when the TPM unseals the key (or, before the first session, answers at all).
    func probe() -> Result<Void, KeyringError> { unsealKey(create: false).map { _ in () } }

    /// The key the TPM unseals; with `create`, made and sealed now if there is none yet.
    func unsealKey(create: Bool) -> Result<SymmetricKey?, KeyringError> {
        let tcti = self.tcti()
        switch SealedFiles.read(keyPath) {
        case .failure(let error): return .failure(error)
        case .success(let blob?):
            let unsealed = filling(Self.secretCapacity, tcti: tcti) { output, capacity, length, place in
                blob.withUnsafeBufferPointer { input in tokend_tpm2_unseal(tcti, input.baseAddress, input.count, output, capacity, length, place) }
            }
            guard case .success(var secret) = unsealed else { return unsealed.map { _ in nil } }
            defer { Self.wipe(&secret) }
            guard secret.count == 32 else { return .failure(KeyringError(.corrupt, "\(keyPath) unseals to something that is not a 256-bit key")) }
            return .success(SymmetricKey(data: secret))
        case .success(nil):
            // No key yet: nothing was ever sealed here. Still say whether the TPM answers, with
            // the cheapest command there is (no key made, loaded or thrown away).
            guard create else { return answers(tcti: tcti).map { nil } }
            return sealNewKey(tcti: tcti).map { Optional($0) }
        }
    }

    /// A new random key sealed by the TPM, written beside the sessions.
    func sealNewKey(tcti: String?) -> Result<SymmetricKey, KeyringError> {
        let key = SymmetricKey(size: .bits256)
        let sealed = filling(Self.blobCapacity, tcti: tcti) { output, capacity, length, place in
            key.withUnsafeBytes { secret in
                tokend_tpm2_seal(tcti, secret.bindMemory(to: UInt8.self).baseAddress, secret.count, output, capacity, length, place)
            }
        }
        return sealed.flatMap { blob in SealedFiles.write(blob, to: keyPath, directory: directory).map { key } }
    }

    /// Whether a TPM answers at `tcti` (TPM2_GetRandom of a few bytes).
    func answers(tcti: String?) -> Result<Void, KeyringError> {
        filling(8, tcti: tcti) { output, capacity, length, place in
            length.pointee = capacity
            return tokend_tpm2_get_random(tcti, output, capacity, place)
        }.map { _ in () }
    }

    /// What the shim's seal may hold (`TOKEND_TPM2_MAX_SECRET`), and a sealed object's size
    /// bound: its marshalled public and private parts are a few hundred bytes.
    static let secretCapacity = 128
    static let blobCapacity = 4096

    /// One shim call that fills a buffer of `capacity` bytes and says how many it wrote, retried
    /// while the TPM is busy: those bytes, or what its failure means. The buffer is wiped after.
    func filling(
        _ capacity: Int, tcti: String?,
        _ call: (UnsafeMutablePointer<UInt8>?, Int, UnsafeMutablePointer<Int>, UnsafeMutablePointer<UnsafePointer<CChar>?>) -> Int32
    ) -> Result<[UInt8], KeyringError> {
        var output = [UInt8](repeating: 0, count: capacity)
        defer { Self.wipe(&output) }
        var length = 0
        var place: UnsafePointer<CChar>?
        let rc = Self.retryingWhileBusy {
            output.withUnsafeMutableBufferPointer { buffer in call(buffer.baseAddress, buffer.count, &length, &place) }
        }
        guard rc == 0 else { return .failure(failure(rc, place, tcti: tcti)) }
        return .success(Array(output[0..<min(max(length, 0), capacity)]))
    }

    /// Zeroes bytes that held a key before they are freed.
    static func wipe(_ bytes: inout [UInt8]) {
        bytes.withUnsafeMutableBytes { if let base = $0.baseAddress { memset(base, 0, $0.count) } }
    }

    /// 40 tries 50 ms apart: another client's seal or unseal holds the TPM's slots for a few
    /// milliseconds; two seconds of it is a TPM that is stuck, which the store then reports.
    static let busyTries = 40
    static let busyPause: UInt32 = 50_000

    /// `call` again while the TPM says it is busy.
    static func retryingWhileBusy(_ call: () -> Int32) -> Int32 {
        var rc = call()
        var tries = 1
        while rc != 0, tokend_tpm2_is_busy(rc) != 0, tries < busyTries {
            usleep(busyPause)
            rc = call()
            tries += 1
        }
        return rc
    }

    /// tpm2-tss's runtime libraries by soname, which holds on any release; the Debian 12 names
    /// are what scripts/package finds for them (`dpkg -S`), and the package recommends them.
    /// Loading is tried once per process (CTokendTPM2's tss2.c), hence the restart.
    static let librarySonames = Array(sequence(state: 0) { index in
        defer { index += 1 }
        return tokend_tpm2_soname(index).map { String(cString: $0) }
    })
    static let librarySteps = "install tpm2-tss's runtime libraries \(librarySonames.joined(separator: ", ")) "
        + "(Debian 12: `apt-get install libtss2-esys-3.0.2-0 libtss2-tctildr0 libtss2-mu0 libtss2-rc0`, which the tokend package "
        + "recommends), then restart tokend (`systemctl --user restart tokend`); or choose another store (see README, \"Stores\")"

    /// What a failed TPM call means for the store, with its steps.
    func failure(_ rc: Int32, _ place: UnsafePointer<CChar>?, tcti: String?) -> KeyringError {
        let call = place.map { String(cString: $0) } ?? "TPM"
        if tokend_tpm2_is_missing_library(rc) != 0 {
            return KeyringError(.unavailable, "the tpm2 store cannot load tpm2-tss (\(call))", steps: Self.librarySteps)
        }
        let said = "\(call): \(String(cString: tokend_tpm2_describe(rc)))"
        let target = tcti ?? "the default TCTI (/dev/tpmrm0)"
        if tokend_tpm2_is_foreign(rc) != 0 {
            return KeyringError(
                .unavailable, "the sealed key \(keyPath) was not sealed by this TPM (\(said))",
                steps: "these sessions were sealed on another machine or before the TPM was cleared and cannot be read here; "
                    + "move \(directory) aside and sign in again (`tokenctl login ACCOUNT`) (see README, \"A headless server\")")
        }
        if tokend_tpm2_is_unreachable(rc) != 0 {
            return KeyringError(
                .unavailable, "no TPM answers at \(target) (\(said))",
                steps: "check that the TPM is there and this user may use it (`ls -l /dev/tpmrm0`: group tss; `tpm2_getrandom 8`), "
                    + "or set tpm2_tcti in the configuration (see README, \"A headless server\")")
        }
        return KeyringError(
            .unavailable, "the TPM refused (\(said))",
            steps: "check the TPM with `tpm2_getrandom 8` as tokend's user; an owner hierarchy with a password is not supported (see README, \"A headless server\")")
    }
}
