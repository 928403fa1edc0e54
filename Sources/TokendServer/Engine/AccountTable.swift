/// The engine's accounts by name: a dictionary that keeps `census` and `held` in step with every
/// change, so the state counts never need a pass over all accounts and the event loop never
/// serves a token the engine has dropped.
struct AccountTable: Sequence {
    private var storage: [String: AccountEngine.Account] = [:]
    private(set) var census = AccountCensus()
    let held: HeldTokens

    init(held: HeldTokens = HeldTokens()) {
        self.held = held
    }

    subscript(name: String) -> AccountEngine.Account? {
        get { storage[name] }
        set {
            if let old = storage[name] { census.remove(old.machine) }
            if let newValue { census.add(newValue.machine) }
            storage[name] = newValue
            publish(name)
        }
        // In place, as a dictionary's own subscript: `accounts[name]?.machine.x = y` must not copy.
        _modify {
            if let old = storage[name] { census.remove(old.machine) }
            defer {
                if let new = storage[name] { census.add(new.machine) }
                publish(name)
            }
            yield &storage[name]
        }
    }

    private func publish(_ name: String) {
        held.set(name, storage[name].map { HeldTokens.Entry(tokens: $0.machine.servableTokens, defaultKind: $0.configuration.defaultTokenKind) })
    }

    @discardableResult
    mutating func removeValue(forKey name: String) -> AccountEngine.Account? {
        let old = storage[name]
        self[name] = nil
        return old
    }

    var count: Int { storage.count }
    var keys: Dictionary<String, AccountEngine.Account>.Keys { storage.keys }
    var values: Dictionary<String, AccountEngine.Account>.Values { storage.values }

    func makeIterator() -> Dictionary<String, AccountEngine.Account>.Iterator { storage.makeIterator() }
}
