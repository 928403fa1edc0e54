import TokendCore
import TokendKeyring

/// Everything the engine keeps per account name, in one collection: each configured account's
/// `Account`, and the session set aside for a name that must still reach the keyring (an
/// account a reload removed while its session was unsaved, or pointed at another endpoint). It
/// keeps `census`, `held` and `files` in step with every change, so the state counts never need a
/// pass over all accounts, the event loop never serves a token the engine has dropped and no
/// token file outlives the session it came from.
struct AccountTable {
    struct Entry {
        var account: AccountState?
        /// A session no configured account holds that the keyring has not taken yet: written
        /// before the account's next read, or by the keyring poll once the account is gone.
        var setAside: TokenSet?

        var isEmpty: Bool { account == nil && setAside == nil }
    }

    private var entries: [String: Entry] = [:]
    private(set) var census = AccountCensus()
    /// How many accounts are configured (entries holding only a set-aside session do not count).
    private(set) var count = 0
    let held: HeldTokens
    let files: TokenFiles?

    init(held: HeldTokens = HeldTokens(), files: TokenFiles? = nil) {
        self.held = held
        self.files = files
    }

    subscript(name: String) -> AccountState? {
        get { entries[name]?.account }
        set {
            var entry = entries[name] ?? Entry()
            note(entry.account, replacedBy: newValue)
            entry.account = newValue
            store(entry, name)
        }
        // In place: `accounts[name]?.apply(input)` must not copy the account out and back.
        _modify {
            var entry = entries.removeValue(forKey: name) ?? Entry()
            let old = entry.account
            defer {
                note(old, replacedBy: entry.account)
                store(entry, name)
            }
            yield &entry.account
        }
    }

    /// The session set aside for `name`, if any (see `Entry.setAside`).
    subscript(setAside name: String) -> TokenSet? {
        get { entries[name]?.setAside }
        set {
            var entry = entries[name] ?? Entry()
            entry.setAside = newValue
            entries[name] = entry.isEmpty ? nil : entry
        }
    }

    /// Whether any set-aside session belongs to no configured account any more (the keyring
    /// poll's question, asked without building the list).
    var hasSetAsideOfRemoved: Bool {
        entries.values.contains { $0.account == nil && $0.setAside != nil }
    }

    /// Names whose set-aside session belongs to no configured account any more, sorted.
    var setAsideOfRemoved: [String] {
        entries.compactMap { $0.value.account == nil && $0.value.setAside != nil ? $0.key : nil }.sorted()
    }

    /// Removes the account (a reload). A session the keyring has not taken yet (it was locked) is
    /// set aside and still written: with a provider that rotates, the stored one may be dead
    /// already. True when it was.
    mutating func remove(_ name: String) -> Bool {
        let removed = self[name]
        self[name] = nil
        guard let removed, removed.unsaved, let held = removed.tokens else { return false }
        self[setAside: name] = held
        return true
    }

    /// The configured accounts' names, sorted.
    var names: [String] {
        entries.compactMap { $0.value.account == nil ? nil : $0.key }.sorted()
    }

    var configured: some Sequence<(name: String, account: AccountState)> {
        entries.lazy.compactMap { name, entry in entry.account.map { (name: name, account: $0) } }
    }

    /// What `status` shows of the accounts `names` (`keyring`: the mood of each one's store).
    func reports(_ names: [String], keyring: (String) -> KeyringState, at now: Date) -> [AccountReport] {
        names.compactMap { name in self[name].map { AccountReport($0, named: name, keyring: keyring(name), at: now) } }
    }

    /// One line for systemd's STATUS=: "3 accounts: 2 active, 1 needs login; keyring locked"
    /// (`unusableStores`: "keyring locked", "store pass unavailable", …).
    func summary(unusableStores: [String], configurationBroken: Bool, at now: Date) -> String {
        let states = census.counts(at: now).sorted { ($0.value, $1.key) > ($1.value, $0.key) }
            .map { "\($0.value) \($0.key.split(separator: "_").joined(separator: " "))" }
        var summary = "\(count) account\(count == 1 ? "" : "s")"
        if !states.isEmpty { summary += ": " + states.joined(separator: ", ") }
        if configurationBroken { summary += "; configuration broken" }
        for store in unusableStores { summary += "; \(store)" }
        return summary
    }

    private mutating func note(_ old: AccountState?, replacedBy new: AccountState?) {
        if let old {
            census.remove(old.stateNames)
            count -= 1
        }
        if let new {
            census.add(new.stateNames)
            count += 1
        }
    }

    private mutating func store(_ entry: Entry, _ name: String) {
        entries[name] = entry.isEmpty ? nil : entry
        let servable = entry.account?.servableTokens
        let defaultKind = entry.account?.configuration.defaultTokenKind ?? .id
        held.set(name, tokens: servable, horizon: entry.account?.servingHorizon, defaultKind: entry.account.map { _ in defaultKind })
        files?.update(name, files: entry.account?.configuration.tokenFiles ?? [], defaultKind: defaultKind, tokens: servable)
    }
}
