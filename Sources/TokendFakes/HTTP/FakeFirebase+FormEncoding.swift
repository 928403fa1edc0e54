import Foundation
import TokendProviders

/// `application/x-www-form-urlencoded` read back: the providers' encoder (WHATWG) writes the
/// stand-ins' forms and URLs, this reads token request bodies and query strings.
extension FormEncoding {
    /// Decodes `a=1&b=two+words`; the first occurrence of a name wins, a name without `=` maps to "".
    static func decode(_ text: Substring) -> [String: String] {
        var fields: [String: String] = [:]
        for pair in text.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = unescape(parts[0])
            guard fields[name] == nil else { continue }
            fields[name] = parts.count > 1 ? unescape(parts[1]) : ""
        }
        return fields
    }

    static func decode(_ bytes: [UInt8]) -> [String: String] {
        decode(Substring(decoding: bytes, as: UTF8.self))
    }

    /// `+` is a space in forms (not in RFC 3986), then percent-escapes; a broken escape is kept
    /// as written rather than failing the whole body.
    static func unescape(_ text: Substring) -> String {
        let spaced = text.replacingOccurrences(of: "+", with: " ")
        return spaced.removingPercentEncoding ?? spaced
    }
}
