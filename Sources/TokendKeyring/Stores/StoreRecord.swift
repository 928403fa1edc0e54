import Glibc
import TokendCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Where `tokenctl store move` put each moved account (`$XDG_STATE_HOME/tokend/stores.json`):
/// the record overrides the configuration's `store` for that account, and names the stores that
/// may still hold an old copy of its session to remove (README, "Stores", "Moving a session").
/// It holds store names only, never a secret.
public struct StoreRecord: Sendable, Equatable, Codable {
    public struct Entry: Sendable, Equatable, Codable {
        /// Where the account's session lives now; nil: where the configuration says (a move began
        /// but never switched).
        public var store: StoreKind?
        /// Stores that may hold an older copy of the session: a move's target before the switch
        /// (a copy written, then a crash), its source after it. Nothing writes the account there
        /// any more, so such a copy is never the newest.
        public var leftovers: [StoreKind]

        public init(store: StoreKind? = nil, leftovers: [StoreKind] = []) {
            self.store = store
            self.leftovers = leftovers
        }

        var isEmpty: Bool { store == nil && leftovers.isEmpty }
    }

    /// The format, so a later one can be told apart.
    public var version = 1
    public var accounts: [String: Entry] = [:]

    public init(accounts: [String: Entry] = [:]) {
        self.accounts = accounts
    }

    /// The record with the account's entry changed by `change` (dropped once empty).
    func changing(_ account: String, _ change: (inout Entry) -> Void) -> StoreRecord {
        var record = self
        var entry = accounts[account] ?? Entry()
        change(&entry)
        entry.leftovers = StoreKind.allCases.filter { entry.leftovers.contains($0) && $0 != entry.store }
        record.accounts[account] = entry.isEmpty ? nil : entry
        return record
    }
}

/// The record's file: 0600 in a 0700 folder, replaced atomically (`SealedFiles.write`: a
/// temporary file, fsync, rename, fsync of the folder), so a kill -9 leaves the old record or the
/// new one, whole.
public struct StoreRecordFile: Sendable {
    public let path: String
    public let directory: String

    /// `$XDG_STATE_HOME/tokend/stores.json` (`~/.local/state` without it, XDG's default).
    public init(environment: [String: String]) {
        directory = StoreRecordFile.stateDirectory(environment)
        path = directory + "/stores.json"
    }

    /// `$XDG_STATE_HOME/tokend`: the record's folder and the `tpm2` store's parent.
    static func stateDirectory(_ environment: [String: String]) -> String {
        let state = environment["XDG_STATE_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? ((environment["HOME"] ?? "") + "/.local/state")
        return state + "/tokend"
    }

    /// The record; an empty one when no account was ever moved (no file).
    public func load() -> Result<StoreRecord, KeyringError> {
        switch SealedFiles.read(path) {
        case .failure(let error): return .failure(error)
        case .success(nil): return .success(StoreRecord())
        case .success(let bytes?):
            guard let record = try? JSONDecoder().decode(StoreRecord.self, from: Data(bytes)), record.version == 1 else {
                return .failure(KeyringError(
                    .corrupt, "\(path) is not a record of moved sessions tokend wrote",
                    steps: "it says which store each moved account's session is in: restore it from a backup, or remove it and move the accounts again (`tokenctl store move ACCOUNT --to STORE`) (see README, \"Stores\")"))
            }
            return .success(record)
        }
    }

    public func save(_ record: StoreRecord) -> Result<Void, KeyringError> {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        guard let data = try? encoder.encode(record) else { return .failure(KeyringError(.failed, "could not encode the record of moved sessions")) }
        return SealedFiles.write(Array(data) + [0x0A], to: path, directory: directory)
    }
}
