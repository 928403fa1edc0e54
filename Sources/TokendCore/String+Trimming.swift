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

extension String {
    /// Control characters (newlines, tabs, ESC, C1) as spaces: text from outside (a peer
    /// process's name, a service's error message) stays one line in a log or on a terminal and
    /// cannot drive either.
    public var singleLine: String {
        let isControl: (Unicode.Scalar) -> Bool = { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }
        guard unicodeScalars.contains(where: isControl) else { return self }
        var result = String.UnicodeScalarView()
        for scalar in unicodeScalars { result.append(isControl(scalar) ? " " : scalar) }
        return String(result)
    }
}
