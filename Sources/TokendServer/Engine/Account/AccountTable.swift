import TokendCore

/// Everything the engine keeps per account name, in one collection: each configured account's
/// `Account`, and the session set aside for a name that must still reach the keyring (an
/// account a reload removed while its session was unsaved, or pointed at another endpoint). It
/// keeps `census`, `held` and `files` in step with every change, so the state counts never need a
/// pass over all accounts, the event loop never serves a token the engine has dropped and no
/// token file outlives the session it came from.
struct AccountTable {
    struct Entry {
        var account: AccountEngine.Account?
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

    subscript(name: String) -> AccountEngine.Account? {
        get { entries[name]?.account }
        set {
            var entry = entries[name] ?? Entry()
            note(entry.account, replacedBy: newValue)
            entry.account = newValue
            store(entry, name)
        }
        // In place: `accounts[name]?.machine.x = y` must not copy the account out and back.
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

    @discardableResult
    mutating func removeValue(forKey name: String) -> AccountEngine.Account? {
        let old = self[name]
        self[name] = nil
        return old
    }

    /// The configured accounts' names, sorted.
    var names: [String] {
        entries.compactMap { $0.value.account == nil ? nil : $0.key }.sorted()
    }

    var configured: some Sequence<(name: String, account: AccountEngine.Account)> {
        entries.lazy.compactMap { name, entry in entry.account.map { (name: name, account: $0) } }
    }

    private mutating func note(_ old: AccountEngine.Account?, replacedBy new: AccountEngine.Account?) {
        if let old {
            census.remove(old.machine)
            count -= 1
        }
        if let new {
            census.add(new.machine)
            count += 1
        }
    }

    private mutating func store(_ entry: Entry, _ name: String) {
        entries[name] = entry.isEmpty ? nil : entry
        let servable = entry.account?.machine.servableTokens
        let defaultKind = entry.account?.configuration.defaultTokenKind ?? .id
        held.set(name, tokens: servable, horizon: entry.account?.machine.servingHorizon, defaultKind: entry.account.map { _ in defaultKind })
        files?.update(name, files: entry.account?.configuration.tokenFiles ?? [], defaultKind: defaultKind, tokens: servable)
    }
}
