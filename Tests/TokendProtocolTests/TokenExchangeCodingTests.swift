import Testing
import TokendCore
@testable import TokendProtocol

/// The hand-coded `token` exchange must mean exactly what the Codable definitions mean, and hand
/// everything else back to them.
@Suite struct TokenExchangeCodingTests {
    @Test(arguments: [
        TokenArgs(account: "work"),
        TokenArgs(account: "work", minValid: 60, kind: .access, timeout: 30),
        TokenArgs(account: "quote\" back\\slash\ttab\u{1}ünï", minValid: 0.25, kind: .id, timeout: 1e-3),
        TokenArgs(account: "", minValid: 86_400, timeout: 300),
        TokenArgs(account: "api", kind: .access, scope: "read:a write:b", audience: "https://api.example/"),
    ])
    func aTokenRequestLineDecodesToTheSameRequest(_ args: TokenArgs) throws {
        for id: RequestID? in [nil, .number(1), .number(-3)] {
            let line = try #require(TokenExchangeCoding.requestLine(Command.token(args).fields(id: id)))
            #expect(line.last == UInt8(ascii: "\n"))
            #expect(line.dropLast().allSatisfy { $0 != UInt8(ascii: "\n") })
            #expect(try WireCoding.decodeFields(Array(line.dropLast())).get() == Command.token(args).fields(id: id))
        }
    }

    @Test func otherRequestsAreLeftToTheEncoder() {
        #expect(TokenExchangeCoding.requestLine(Command.token(TokenArgs(account: "a")).fields(id: .string("x"))) == nil)
        #expect(TokenExchangeCoding.requestLine(Command.token(TokenArgs(account: "a")).fields(id: .number(1.5))) == nil)
        #expect(TokenExchangeCoding.requestLine(Command.token(TokenArgs(account: "a", minValid: .infinity)).fields(id: nil)) == nil)
        #expect(TokenExchangeCoding.requestLine(Command.token(TokenArgs(account: "a", timeout: .nan)).fields(id: nil)) == nil)
        #expect(TokenExchangeCoding.requestLine(Command.status(StatusArgs(account: "a")).fields(id: nil)) == nil, "another op's fields")
    }

    @Test(arguments: [
        #"{"account":"bench","expires_at":"2026-11-23T17:59:58Z","expires_in":3598,"id":1,"kind":"id","ok":true,"token":"eyJ.eyJ.c2ln"}"#,
        #"{"ok":true,"token":"t","kind":"access","expires_in":0}"#,
        #" { "ok" : false , "id" : -7 , "account" : "ünï" } "#,
        #"{"ok":true,"expires_in":-12}"#,
    ])
    func aTokenReplyReadsAsTheDecoderReadsIt(_ line: String) throws {
        let fast = try #require(TokenExchangeCoding.reply(Array(line.utf8)))
        let full = try JSONDecoder().decode(Response.self, from: Data(line.utf8))
        #expect(fast.ok == full.ok)
        #expect(fast.id == full.id)
        #expect(fast.account == full.account)
        #expect(fast.token == full.token)
        #expect(fast.kind == full.kind)
        #expect(fast.expiresAt == full.expiresAt)
        #expect(fast.expiresIn == full.expiresIn)
        #expect(fast.error == nil && full.error == nil)
    }

    @Test(arguments: [
        #"{"id":1,"ok":false,"error":{"code":"needs_login","message":"log in"}}"#,
        #"{"ok":true,"token":"a\"b"}"#,
        #"{"ok":true,"token":"a\u0041"}"#,
        #"{"ok":true,"accounts":[]}"#,
        #"{"ok":true,"ok":false}"#,
        #"{"ok":true,"expires_in":1.5}"#,
        #"{"ok":true,"expires_in":012}"#,
        #"{"ok":true,"expires_in":123456789012345678901234567890}"#,
        #"{"ok":true,"id":"one"}"#,
        #"{"ok":true,"kind":"refresh"}"#,
        #"{"ok":true,"token":null}"#,
        #"{"token":"t"}"#,
        #"{}"#,
        #"{"ok":true"#,
        #"{"ok":true} x"#,
        #"{"ok":tru}"#,
        #"[]"#,
        "",
    ])
    func anythingElseIsLeftToTheDecoder(_ line: String) {
        #expect(TokenExchangeCoding.reply(Array(line.utf8)) == nil)
    }

    @Test func invalidUTF8IsLeftToTheDecoder() {
        let line = Array(#"{"ok":true,"token":""#.utf8) + [0xFF] + Array(#""}"#.utf8)
        #expect(TokenExchangeCoding.reply(line) == nil)
    }

    // The daemon's side: the request decoded and the answer written by hand.

    @Test(arguments: [
        #"{"op":"token","account":"bench","min_valid":60}"#,
        #"{"account":"work","id":7,"kind":"access","min_valid":0,"op":"token","timeout":30}"#,
        #" { "op" : "token" , "account" : "api" , "scope" : "read:a" , "audience" : "https://x/" } "#,
        #"{"op":"token","id":-3,"account":""}"#,
        #"{"op":"token"}"#,
    ])
    func aTokenRequestLineDecodesByHandAsTheDecoderReadsIt(_ line: String) throws {
        let fast = try #require(TokenExchangeCoding.request(Array(line.utf8)))
        #expect(fast == (try JSONDecoder().decode(RequestFields.self, from: Data(line.utf8))))
    }

    @Test(arguments: [
        #"{"op":"status"}"#,
        #"{"op":"token","account":"a","min_valid":1.5}"#,
        #"{"op":"token","account":"a","min_valid":"60"}"#,
        #"{"op":"token","id":"x","account":"a"}"#,
        #"{"op":"token","account":"a\"b"}"#,
        #"{"op":"token","account":"a","account":"b"}"#,
        #"{"op":"token","account":"a","kind":"refresh"}"#,
        #"{"op":"token","account":"a","refresh_token":"r"}"#,
        #"{"op":"token","account":"a"} x"#,
        #"{"account":"a"}"#,
        #"{"op":"token","account":null}"#,
        #"{"op":"token","account":"a","timeout":123456789012345678901234567890}"#,
        #"{"op":"token","id":-99999999999999999999,"account":"a"}"#,
        #"{"op":"token","account":"a","min_valid":0x10}"#,
        "",
    ])
    func anyOtherRequestLineIsLeftToTheDecoder(_ line: String) {
        #expect(TokenExchangeCoding.request(Array(line.utf8)) == nil)
    }

    static func answer(id: RequestID?, token: String = "eyJ.eyJ.c2ln", account: String = "work") -> Response {
        var response = Response(id: id)
        response.account = account
        response.token = token
        response.kind = .id
        response.expiresAt = "2026-11-25T23:00:00Z"
        response.expiresIn = 3599
        return response
    }

    /// The encoder's own bytes, through the generic path the hand-written line stands in for.
    static func encoded<Value: Encodable>(_ value: Value) -> [UInt8] { WireCoding.encodeLine(value) }

    @Test(arguments: [answer(id: nil), answer(id: .number(7)), answer(id: .number(-1), token: "ya29.a/b_c-d", account: "")])
    func aTokenAnswerIsWrittenByHandByteForByteAsTheEncoderWritesIt(_ response: Response) throws {
        let line = try #require(TokenExchangeCoding.replyLine(response))
        #expect(line == Self.encoded(response))
        #expect(WireCoding.encodeLine(response) == line)
    }

    @Test(arguments: [
        answer(id: .string("x")), answer(id: .number(1.5)), answer(id: nil, token: "a\"b"), answer(id: nil, account: "ünï"),
        Response.failure(TokendError(.needsLogin, "log in")), { var r = answer(id: nil); r.warning = "w"; return r }(),
    ])
    func anyOtherAnswerIsLeftToTheEncoder(_ response: Response) {
        #expect(TokenExchangeCoding.replyLine(response) == nil)
        #expect(WireCoding.encodeLine(response) == Self.encoded(response), "the same bytes either way")
    }

    // Byte by byte (swift-nio's way of testing a decoder): a line fed one byte at a time frames
    // once, at its newline; every proper prefix is refused cleanly (nil, never a trap or a
    // half-read value); and no single changed byte makes the hand-written reading disagree with
    // JSONDecoder's.

    static let requestLines = [
        #"{"account":"bench","id":1,"op":"token","timeout":30}"#,
        #"{"account":"api","audience":"https://x/","id":-3,"kind":"access","min_valid":120,"op":"token","scope":"read:a","timeout":5}"#,
        #" { "op" : "token" , "account" : "ünï" } "#,
    ]

    static let replyLines = [
        #"{"account":"bench","expires_at":"2026-11-23T17:59:58Z","expires_in":3598,"id":1,"kind":"id","ok":true,"token":"eyJ.eyJ.c2ln"}"#,
        #" { "ok" : false , "id" : -7 , "account" : "ünï" } "#,
    ]

    @Test(arguments: requestLines)
    func aRequestLineFedOneByteAtATimeFramesOnceAndDecodes(_ text: String) throws {
        var framer = LineFramer()
        var framed: [[UInt8]] = []
        for byte in Array(text.utf8) + [UInt8(ascii: "\n")] {
            framer.append([byte])
            while let line = try framer.nextLine() { framed.append(line) }
        }
        #expect(framed == [Array(text.utf8)])
        let fast = try #require(TokenExchangeCoding.request(framed[0]))
        #expect(fast == (try JSONDecoder().decode(RequestFields.self, from: Data(text.utf8))))
    }

    @Test(arguments: requestLines)
    func everyPrefixOfARequestLineIsRefusedCleanly(_ text: String) {
        let bytes = Array(text.utf8)
        let whole = bytes.count - (bytes.reversed().firstIndex { $0 != UInt8(ascii: " ") } ?? 0)
        for end in 0..<whole {
            let prefix = Array(bytes[..<end])
            #expect(TokenExchangeCoding.request(prefix) == nil, "prefix of \(end) bytes")
            guard case .failure = WireCoding.decodeFields(prefix) else {
                Issue.record("a prefix of \(end) bytes decoded")
                continue
            }
        }
    }

    @Test(arguments: replyLines)
    func everyPrefixOfAReplyLineIsRefusedCleanly(_ text: String) {
        let bytes = Array(text.utf8)
        let whole = bytes.count - (bytes.reversed().firstIndex { $0 != UInt8(ascii: " ") } ?? 0)
        for end in 0..<whole {
            #expect(TokenExchangeCoding.reply(Array(bytes[..<end])) == nil, "prefix of \(end) bytes")
        }
        #expect(TokenExchangeCoding.reply(bytes) != nil)
    }

    /// Bytes that change what a JSON text means: structure, quotes, escapes, digits, signs,
    /// invalid UTF-8.
    static let substitutes: [UInt8] = Array(#"{}[],:" \0159-.eatrufnl"#.utf8) + [0x00, 0x0A, 0x7F, 0xC3, 0xFF]

    @Test(arguments: requestLines)
    func noChangedByteMakesTheHandReadRequestDisagreeWithTheDecoder(_ text: String) {
        Self.everySubstitution(of: text, fast: TokenExchangeCoding.request) { try? JSONDecoder().decode(RequestFields.self, from: Data($0)) }
    }

    @Test(arguments: replyLines)
    func noChangedByteMakesTheHandReadReplyDisagreeWithTheDecoder(_ text: String) {
        Self.everySubstitution(of: text, fast: TokenExchangeCoding.reply) { try? JSONDecoder().decode(Response.self, from: Data($0)) }
    }

    /// `text` with each byte replaced by each of `substitutes`: what `fast` reads, if anything,
    /// is what `full` reads.
    static func everySubstitution<Value: Equatable>(of text: String, fast: ([UInt8]) -> Value?, full: ([UInt8]) -> Value?) {
        let bytes = Array(text.utf8)
        for index in bytes.indices {
            for substitute in substitutes where substitute != bytes[index] {
                var changed = bytes
                changed[index] = substitute
                guard let read = fast(changed) else { continue }
                #expect(read == full(changed), "byte \(index) as \(substitute)")
            }
        }
    }
}
