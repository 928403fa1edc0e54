/// Environment variables, looked up by name: the process's own (`Environment.process`, in
/// TokendSystem), or the ones a daemon or a test was given. Not a Dictionary: the first `[String: String]` a static binary
/// builds costs a scan of every protocol conformance in it (its storage's `String: Hashable`),
/// measured at a fifth of the user time of a `tokenctl token` call (perf).
public struct Environment: Sendable, ExpressibleByDictionaryLiteral {
    private var variables: [(name: String, value: String)]

    public init(_ dictionary: [String: String]) {
        variables = dictionary.map { ($0.key, $0.value) }
    }

    public init(dictionaryLiteral elements: (String, String)...) {
        variables = elements.map { (name: $0.0, value: $0.1) }
    }

    /// The variable's value; the last one set wins, as in the environment itself.
    public subscript(name: String) -> String? {
        variables.last { $0.name == name }?.value
    }

    public var dictionary: [String: String] {
        Dictionary(variables, uniquingKeysWith: { _, last in last })
    }

    /// Appends one variable (a later one wins over an earlier one of the same name, as in the
    /// environment itself): how `Environment.process` (TokendSystem) fills one without a Dictionary.
    public mutating func append(name: String, value: String) {
        variables.append((name, value))
    }
}
