import Foundation
import Testing
import TokendCore
import TokendProtocol
@testable import TokendServer

/// `CodingMemo`, the accept loop's memory of the last line's decoding and the last reply's
/// encoding: whatever the sequence, it gives exactly what `WireCoding` gives.
@Suite struct CodingMemoTests {
    private static func decode(_ memo: inout CodingMemo, _ line: String) -> CodingMemo.Decoded {
        Array(line.utf8).withUnsafeBytes { memo.decode($0) }
    }

    private static func same(_ first: CodingMemo.Decoded, _ second: CodingMemo.Decoded) -> Bool {
        first.id == second.id && first.command == second.command
    }

    /// Repeated, alternating and malformed lines each decode as `WireCoding.decodeRequest` does.
    @Test func decodingMatchesTheDecoderWhateverCameBefore() {
        let lines = [
            #"{"account":"work","id":1,"op":"token"}"#, #"{"account":"work","id":1,"op":"token"}"#,
            #"{"account":"home","id":1,"op":"token"}"#, #"{"account":"work","id":1,"op":"token"}"#,
            #"{"op":"hello"}"#, "not json", "not json", #"{"op":"hello","id":"x"}"#, #"{"op":"hello"}"#,
        ]
        var memo = CodingMemo()
        for line in lines {
            #expect(Self.same(Self.decode(&memo, line), WireCoding.decodeRequest(Array(line.utf8))), "\(line)")
        }
    }

    /// A reply is reused only for an equal response to the same line with the same token bytes:
    /// a new token, another line, or an `id` equal as a String but spelled in other code points
    /// is encoded again.
    @Test func encodingMatchesTheEncoderWhateverCameBefore() {
        var memo = CodingMemo()
        func reply(_ line: String, _ response: Response) -> [UInt8] {
            _ = Self.decode(&memo, line)
            return memo.encode(response)
        }
        var token = Response(id: .number(1))
        token.account = "work"
        token.token = "first"
        token.kind = .id
        token.expiresAt = "2026-12-02T05:00:00Z"
        token.expiresIn = 60
        var refreshed = token
        refreshed.token = "second"
        let line = #"{"account":"work","id":1,"op":"token"}"#
        #expect(reply(line, token) == WireCoding.encodeLine(token))
        #expect(reply(line, token) == WireCoding.encodeLine(token))
        #expect(reply(line, refreshed) == WireCoding.encodeLine(refreshed))
        var later = refreshed
        later.expiresIn = 59
        #expect(reply(line, later) == WireCoding.encodeLine(later))

        let composed = Response(id: .string("\u{E9}"))
        let decomposed = Response(id: .string("e\u{301}"))
        #expect(composed == decomposed, "equal as Swift Strings, so only the line tells them apart")
        #expect(reply(#"{"id":"\#u{E9}","op":"hello"}"#, composed) == WireCoding.encodeLine(composed))
        #expect(reply(#"{"id":"e\#u{301}","op":"hello"}"#, decomposed) == WireCoding.encodeLine(decomposed))
        #expect(WireCoding.encodeLine(composed) != WireCoding.encodeLine(decomposed))
    }
}
