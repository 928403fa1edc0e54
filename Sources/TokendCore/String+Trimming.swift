extension StringProtocol {
    /// Without leading and trailing ASCII white space. FoundationEssentials has no
    /// `trimmingCharacters(in:)`, and protocol text never needs Unicode white space rules.
    public var trimmed: String {
        let isSpace: (UInt8) -> Bool = { $0 == 32 || $0 == 9 || $0 == 10 || $0 == 13 }
        let bytes = Array(utf8)
        guard let first = bytes.firstIndex(where: { !isSpace($0) }), let last = bytes.lastIndex(where: { !isSpace($0) }) else { return "" }
        return String(decoding: bytes[first...last], as: UTF8.self)
    }
}
