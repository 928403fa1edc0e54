import Foundation
import Testing
import TokendCore
import TokendProtocol
import TokendTestSupport

/// The accept loop's own serving (docs/architecture.md, "A connection"): it answers the lines it
/// can at once on the listening thread, remembering the last line's decoding and the last
/// reply's encoding (`CodingMemo`), and hands everything else to a channel. Each test asserts
/// replies, never timings.
@Suite struct AcceptLoopTests {
    /// The same line on one connection, before and after the account's token changes: the second
    /// reply carries the token held now, not the one remembered with the line.
    @Test func aRepeatedLineIsAnsweredWithTheTokenHeldNow() async throws {
        try await withWorld { world in
            try await world.importNewUser()
            let connection = try RawConnection(path: world.socketPath)
            let line = Array(#"{"account":"work","id":7,"op":"token"}"#.utf8) + [10]
            #expect(await connection.send(line) == line.count)
            let first = try await connection.response(timeout: 30)
            #expect(first.ok && first.id == .number(7))
            // The fake's tokens carry their second of issue: refreshed until one differs.
            var fresh = ""
            try await poll("a refresh gives the account a new token") {
                _ = try await world.tokenctl(["refresh", "work"])
                fresh = try await world.tokenctl(["token", "work"]).stdout
                return !fresh.isEmpty && fresh != (first.token ?? "") + "\n"
            }
            #expect(await connection.send(line) == line.count)
            let second = try await connection.response(timeout: 30)
            #expect(second.ok && second.id == .number(7))
            #expect(second.token.map { $0 + "\n" } == fresh, "the token held now, not the first one")
        }
    }

    /// Lines in one write, repeated and interleaved, each answered in order with its own bytes.
    /// The two `id`s are the same string to Swift (é precomposed, and e with a combining accent)
    /// but not the same bytes: each reply echoes the bytes its line sent.
    @Test func pipelinedLinesAreAnsweredInOrderWithTheirOwnBytes() async throws {
        try await withWorld { world in
            try await world.importNewUser()
            let composed = #"{"id":"\#u{E9}","op":"hello"}"#
            let decomposed = #"{"id":"e\#u{301}","op":"hello"}"#
            let token = #"{"account":"work","id":1,"op":"token"}"#
            let otherToken = #"{"account":"work","id":2,"op":"token"}"#
            let lines = [composed, composed, decomposed, token, token, otherToken, composed, decomposed]
            let connection = try RawConnection(path: world.socketPath)
            let batch = Array(lines.joined(separator: "\n").utf8) + [10]
            #expect(await connection.send(batch) == batch.count)
            var replies: [[UInt8]] = []
            while replies.count < lines.count, let reply = try await connection.readLine(timeout: 30) { replies.append(reply) }
            #expect(replies.count == lines.count)
            // Bytes, not Strings: Swift compares Strings as Unicode, so "é" contains "e\u{301}".
            func contains(_ bytes: [UInt8], _ part: [UInt8]) -> Bool {
                bytes.indices.contains { bytes[$0...].starts(with: part) }
            }
            for (line, reply) in zip(lines, replies) {
                let response = try JSONDecoder().decode(Response.self, from: Data(reply))
                #expect(response.ok, "\(String(decoding: reply, as: UTF8.self))")
                let sent = Array(line.utf8)
                let id = contains(sent, Array("e\u{301}".utf8)) ? Array("e\u{301}".utf8) : contains(sent, Array("\u{E9}".utf8)) ? Array("\u{E9}".utf8) : nil
                if let id {
                    #expect(contains(reply, Array(#""id":""#.utf8) + id + [UInt8(ascii: "\"")]), "\(String(decoding: reply, as: UTF8.self)) for \(line)")
                } else {
                    #expect(response.id == (line == token ? .number(1) : .number(2)) && response.token != nil)
                }
            }
        }
    }

    /// A line ending in CR (a terminal's CRLF) and a line cut by the read are the channel's to
    /// frame: both are answered, after the lines the loop answered before them.
    @Test func crlfAndSplitLinesAreAnsweredAfterTheOnesBefore() async throws {
        try await withWorld { world in
            try await world.importNewUser()
            let connection = try RawConnection(path: world.socketPath)
            let first = Array(#"{"op":"hello","id":1}"#.utf8) + [10] + Array(#"{"op":"hello","id":2}"#.utf8) + [13, 10]
                + Array(#"{"account":"work","op":"tok"#.utf8)
            #expect(await connection.send(first) == first.count)
            for id in 1...2 {
                let response = try await connection.response(timeout: 30)
                #expect(response.ok && response.id == .number(Double(id)))
            }
            let rest = Array(#"en","id":3}"#.utf8) + [10]
            #expect(await connection.send(rest) == rest.count)
            let third = try await connection.response(timeout: 30)
            #expect(third.ok && third.id == .number(3) && third.token != nil)
        }
    }

    /// Answered lines, then a line over the protocol's cap: the answers go out, then the refusal,
    /// then the close.
    @Test func anOversizeLineAfterAnsweredOnesIsRefused() async throws {
        try await withWorld { world in
            let connection = try RawConnection(path: world.socketPath)
            let hello = Array(#"{"op":"hello","id":1}"#.utf8) + [10]
            let oversize = [UInt8](repeating: UInt8(ascii: "x"), count: LineFramer.maximumLineLength + 1) + [10]
            _ = await connection.send(hello + oversize)
            let answered = try await connection.response(timeout: 30)
            #expect(answered.ok && answered.id == .number(1))
            let refusal = try await connection.response(timeout: 30)
            #expect(!refusal.ok && refusal.error?.code == .tooLarge)
            #expect(await connection.waitForClose(timeout: 30))
        }
    }

    /// A client that pipelines many lines and leaves without reading a reply: the loop drops it
    /// and goes on serving the next client.
    @Test func aClientThatLeavesWithRepliesUnreadLeavesTheLoopServing() async throws {
        try await withWorld { world in
            try await world.importNewUser()
            let line = Array(#"{"account":"work","op":"token"}"#.utf8) + [10]
            do {
                let leaving = try RawConnection(path: world.socketPath)
                _ = await leaving.send(Array([[UInt8]](repeating: line, count: 200).joined()))
            }  // closed here, its replies unread
            let next = try RawConnection(path: world.socketPath)
            #expect(await next.send(line) == line.count)
            let response = try await next.response(timeout: 30)
            #expect(response.ok && response.token != nil)
        }
    }
}
