/// Environment variables, looked up by name: the process's own (`Environment.process`, in
/// TokendSystem), or the ones a daemon or a test was given. Not a Dictionary: the first `[String: String]` a static binary
/// builds costs a scan of every protocol conformance in it (its storage's `String: Hashable`),
/// measured at a fifth of the user time of a `tokenctl token` call (perf).
public struct Environment: Sendable, ExpressibleByDictionaryLiteral {
    // Names and values side by side, not an array of (name, value) tuples: `[String]` is
    // metadata the runtime has ready, an array of tuples is built from its mangled name at run
    // time, ~2 % of a `tokenctl token` process (perf, issue 47).
    private var names: [String] = []
    private var values: [String] = []

    public init(_ dictionary: [String: String]) {
        for (name, value) in dictionary { append(name: name, value: value) }
    }

    public init(dictionaryLiteral elements: (String, String)...) {
        for (name, value) in elements { append(name: name, value: value) }
    }

    /// The variable's value; the last one set wins, as in the environment itself.
    public subscript(name: String) -> String? {
        names.lastIndex(of: name).map { values[$0] }
    }

    public var dictionary: [String: String] {
        Dictionary(zip(names, values), uniquingKeysWith: { _, last in last })
    }

    /// Appends one variable (a later one wins over an earlier one of the same name, as in the
    /// environment itself): how `Environment.process` (TokendSystem) fills one without a Dictionary.
    public mutating func append(name: String, value: String) {
        names.append(name)
        values.append(value)
    }
}
