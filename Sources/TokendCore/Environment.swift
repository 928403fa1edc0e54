import Glibc

/// Environment variables, looked up by name: the process's own (`process`), or the ones a
/// daemon or a test was given. Not a Dictionary: the first `[String: String]` a static binary
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

    /// The process environment, without Foundation's ProcessInfo; with `names`, only those
    /// variables (the plain `tokenctl token` reads four). Split on the bytes: walking each entry
    /// as Characters (grapheme breaking) cost tokenctl 0.6 M instructions, an eighth of a call.
    public static func process(only names: [String]? = nil) -> Environment {
        var environment: Environment = [:]
        if let names {
            for name in names {
                if let value = getenv(name) { environment.variables.append((name, String(cString: value))) }
            }
            return environment
        }
        var cursor = environ
        while let entry = cursor.pointee {
            let length = strlen(entry)
            entry.withMemoryRebound(to: UInt8.self, capacity: length) { start in
                let bytes = UnsafeBufferPointer(start: start, count: length)
                if let equals = bytes.firstIndex(of: UInt8(ascii: "=")) {
                    environment.variables.append((
                        String(decoding: UnsafeBufferPointer(rebasing: bytes[..<equals]), as: UTF8.self),
                        String(decoding: UnsafeBufferPointer(rebasing: bytes[(equals + 1)...]), as: UTF8.self)))
                }
            }
            cursor += 1
        }
        return environment
    }
}
