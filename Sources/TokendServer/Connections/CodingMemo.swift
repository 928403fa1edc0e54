import TokendProtocol
#if canImport(Glibc)
import Glibc
#endif

/// The accept loop's memory of the last request line it decoded and of the last reply it encoded
/// (docs/architecture.md, "A connection"). Clients ask the same line over and over (a build
/// farm's `tokenctl token`, a service on a persistent connection), and both codings are pure
/// functions of their input, so a repeat costs a byte comparison instead of a decode, an encode
/// and their allocations. Whatever the line asks is still answered each time
/// (`RequestRouter.answerAtOnce`: the held token, its promise, the seconds left): only the
/// codings are remembered. One entry each: the loop is one thread, and another line replaces it.
struct CodingMemo {
    typealias Decoded = DecodedRequest

    private var line: [UInt8] = []
    private var decoded: Decoded?
    private var response: Response?
    private var reply: [UInt8] = []

    /// `WireCoding.decodeRequest` of `bytes` (a line without its newline).
    mutating func decode(_ bytes: UnsafeRawBufferPointer) -> Decoded {
        if let decoded, Self.same(line, bytes) { return decoded }
        line = Array(bytes)
        let result = WireCoding.decodeRequest(line)
        decoded = result
        // The reply remembered belongs to the line before: an equal response to another line
        // (an `id` "é" after the same letter as e and a combining accent) is other bytes.
        response = nil
        return result
    }

    /// `WireCoding.encodeLine` of `response`, a reply to the line `decode` saw last. An equal
    /// response encodes to the same bytes, except for strings equal as Unicode but spelled
    /// differently: the token is compared byte for byte; the account and `id` come from the
    /// same line, and the rest (kind, times, `hello`'s list) the daemon writes in ASCII.
    mutating func encode(_ response: Response) -> [UInt8] {
        if let previous = self.response, previous == response, Self.sameBytes(previous.token, response.token) { return reply }
        reply = WireCoding.encodeLine(response)
        self.response = response
        return reply
    }

    private static func same(_ remembered: [UInt8], _ bytes: UnsafeRawBufferPointer) -> Bool {
        remembered.withUnsafeBytes { same($0, bytes) }
    }

    private static func same(_ one: UnsafeRawBufferPointer, _ other: UnsafeRawBufferPointer) -> Bool {
        one.count == other.count && (one.isEmpty || memcmp(one.baseAddress!, other.baseAddress!, one.count) == 0)
    }

    private static func sameBytes(_ first: String?, _ second: String?) -> Bool {
        guard var first, var second else { return first == nil && second == nil }
        return first.withUTF8 { one in second.withUTF8 { other in same(UnsafeRawBufferPointer(one), UnsafeRawBufferPointer(other)) } }
    }
}
