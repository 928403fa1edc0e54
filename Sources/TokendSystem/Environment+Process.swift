import Glibc
import TokendCore

extension Environment {
    /// The process environment, without Foundation's ProcessInfo; with `names`, only those
    /// variables (the plain `tokenctl token` reads four). Split on the bytes: walking each entry
    /// as Characters (grapheme breaking) cost tokenctl 0.6 M instructions, an eighth of a call.
    public static func process(only names: [String]? = nil) -> Environment {
        var environment: Environment = [:]
        if let names {
            for name in names {
                if let value = getenv(name) { environment.append(name: name, value: String(cString: value)) }
            }
            return environment
        }
        var cursor = environ
        while let entry = cursor.pointee {
            let length = strlen(entry)
            entry.withMemoryRebound(to: UInt8.self, capacity: length) { start in
                let bytes = UnsafeBufferPointer(start: start, count: length)
                if let equals = bytes.firstIndex(of: UInt8(ascii: "=")) {
                    environment.append(
                        name: String(decoding: UnsafeBufferPointer(rebasing: bytes[..<equals]), as: UTF8.self),
                        value: String(decoding: UnsafeBufferPointer(rebasing: bytes[(equals + 1)...]), as: UTF8.self))
                }
            }
            cursor += 1
        }
        return environment
    }
}
