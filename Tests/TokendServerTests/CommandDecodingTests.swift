import Foundation
import Testing
import TokendCore
import TokendProtocol
@testable import TokendServer

/// Lines no well-behaved client sends, byte by byte against the handler (no socket needed: the
/// end-to-end hostile-client suite keeps framing, slow clients, floods and disconnects). Each
/// gets one reply naming what was wrong, with the `id` when it could be read, and reaches no
/// engine.
@Suite struct CommandDecodingTests {
    /// Asserts `bytes` get a `bad_request` with `id` that mentions `field`, and asked the engine nothing.
    func expectBadRequest(_ bytes: [UInt8], id: RequestID? = nil, mentions field: String, sourceLocation: SourceLocation = #_sourceLocation) async {
        let stub = StubbedHandler()
        let response = await stub.respond(bytes: bytes, sourceLocation: sourceLocation)
        let what = String(decoding: bytes.prefix(80), as: UTF8.self)
        #expect(response.error?.code == .badRequest, "\(what)", sourceLocation: sourceLocation)
        #expect(response.id == id, "\(what)", sourceLocation: sourceLocation)
        #expect(response.error?.message.contains(field) == true, "\(what): \(response.error?.message ?? "")", sourceLocation: sourceLocation)
        #expect(stub.engine.calls.isEmpty, "\(what)", sourceLocation: sourceLocation)
    }

    func expectBadRequest(_ line: String, id: RequestID? = nil, mentions field: String, sourceLocation: SourceLocation = #_sourceLocation) async {
        await expectBadRequest(Array(line.utf8), id: id, mentions: field, sourceLocation: sourceLocation)
    }

    /// Invalid UTF-8 is not JSON (or, inside the `id`, an invalid `id`); the `id` is echoed when it
    /// can still be read.
    @Test func invalidUTF8IsABadRequest() async {
        for (bytes, id, mentions): ([UInt8], RequestID?, String) in [
            (Array(#"{"op":"hel"#.utf8) + [0xFF, 0xFE] + Array(#"lo","id":5}"#.utf8), .number(5), "JSON"),
            (Array(#"{"op":"hello","id":""#.utf8) + [0xC3, 0x28] + Array(#""}"#.utf8), nil, #""id""#),
            ([0xED, 0xA0, 0x80], nil, "JSON"),  // an encoded surrogate: not UTF-8
            ([0xC0, 0xAF], nil, "JSON"),  // an overlong "/"
        ] {
            await expectBadRequest(bytes, id: id, mentions: mentions)
        }
    }

    @Test func jsonNestedTenThousandDeepIsABadRequest() async {
        let depth = 10_000
        for text in [
            #"{"op":"hello","id":1,"x":"# + String(repeating: "[", count: depth) + String(repeating: "]", count: depth) + "}",
            String(repeating: #"{"a":"#, count: depth), String(repeating: "[", count: depth),
        ] {
            #expect(text.utf8.count < LineFramer.maximumLineLength, "the line reaches the handler")
            await expectBadRequest(text, mentions: "request")
        }
    }

    /// Numbers beyond a Double, NaN and Infinity are not JSON; a finite huge one is out of range.
    @Test func hugeAndNonFiniteNumbersAreBadRequests() async {
        for number in ["1e400", "-1e400", "1e-400", "NaN", "Infinity", "-Infinity", "0x10"] {
            await expectBadRequest(#"{"op":"token","account":"work","min_valid":\#(number)}"#, mentions: "JSON")
        }
        await expectBadRequest(#"{"op":"token","id":2,"account":"work","min_valid":1e300}"#, id: .number(2), mentions: "min_valid")
        await expectBadRequest(#"{"op":"token","id":2,"account":"work","timeout":123456789012345678901234567890}"#, id: .number(2), mentions: "timeout")
    }

    /// A field given twice: the first one counts (JSONDecoder's rule), for `op` as for any field.
    @Test func aDuplicateKeyTakesTheFirstValue() async {
        let stub = StubbedHandler()
        #expect(await stub.respond(#"{"op":"hello","op":"token"}"#).capabilities != nil)
        _ = await stub.respond(#"{"op":"token","account":"first","account":"second"}"#)
        #expect(stub.engine.calls == [.token(account: "first", kind: nil, minValid: 60, timeout: 30, scope: nil)])
    }

    /// Every field with a value of the wrong JSON type; numbers written as strings included.
    @Test(arguments: [
        (#"{"op":1,"id":"t"}"#, "op"), (#"{"op":null,"id":"t"}"#, "op"),
        (#"{"op":"token","id":"t","account":["work"]}"#, "account"), (#"{"op":"token","id":"t","account":"w","min_valid":"60"}"#, "min_valid"),
        (#"{"op":"token","id":"t","account":"w","kind":"refresh"}"#, "kind"), (#"{"op":"token","id":"t","account":"w","kind":1}"#, "kind"),
        (#"{"op":"token","id":"t","account":"w","scope":["a","b"]}"#, "scope"), (#"{"op":"token","id":"t","account":"w","audience":1}"#, "audience"),
        (#"{"op":"token","id":"t","account":"w","timeout":"5"}"#, "timeout"), (#"{"op":"import","id":"t","account":"w","refresh_token":1}"#, "refresh_token"),
        (#"{"op":"import","id":"t","account":"w","refresh_token":"r","id_token":{}}"#, "id_token"),
        (#"{"op":"import","id":"t","account":"w","refresh_token":"r","access_token":true}"#, "access_token"),
        (#"{"op":"import","id":"t","account":"w","refresh_token":"r","expires_at":0}"#, "expires_at"),
        (#"{"op":"login","id":"t","account":"w","method":["email"]}"#, "method"), (#"{"op":"login","id":"t","account":"w","email":1}"#, "email"),
        (#"{"op":"login","id":"t","account":"w","create":"true"}"#, "create"), (#"{"op":"login","id":"t","account":"w","secret":1}"#, "secret"),
        (#"{"op":"login","id":"t","account":"w","scopes":"openid"}"#, "scopes"), (#"{"op":"account","id":"t","account":"w","action":1}"#, "action"),
        (#"{"op":"account","id":"t","account":"w","confirm":"yes"}"#, "confirm"), (#"{"op":"watch","id":"t","profile":1}"#, "profile"),
    ])
    func aFieldOfTheWrongTypeIsNamed(_ line: String, _ field: String) async {
        await expectBadRequest(line, id: .string("t"), mentions: field)
    }

    /// Every field of the table is checked for its type whatever the op: a field of another op
    /// with a wrong value is refused, not ignored like an unknown one.
    @Test(arguments: [
        (#"{"op":"hello","id":"t","min_valid":"60"}"#, "min_valid"), (#"{"op":"list","id":"t","create":"yes"}"#, "create"),
        (#"{"op":"frobnicate","id":"t","scopes":"openid"}"#, "scopes"), (#"{"op":"token","id":"t","account":"w","profile":1}"#, "profile"),
    ])
    func aFieldOfAnotherOpWithTheWrongTypeIsNamed(_ line: String, _ field: String) async {
        await expectBadRequest(line, id: .string("t"), mentions: field)
    }

    /// Values of the right type that break the op's rules: the message names the op and the field.
    @Test(arguments: [
        (#"{"op":"token","id":"t"}"#, #"token: "account""#), (#"{"op":"token","id":"t","account":""}"#, #"token: "account""#),
        (#"{"op":"token","id":"t","account":"w","min_valid":-1}"#, #"token: "min_valid""#),
        (#"{"op":"token","id":"t","account":"w","min_valid":86401}"#, #"token: "min_valid""#),
        (#"{"op":"token","id":"t","account":"w","timeout":301}"#, #"token: "timeout""#),
        (#"{"op":"token","id":"t","account":"w","scope":"read \"x\""}"#, #"token: field "scope""#),
        (#"{"op":"token","id":"t","account":"w","audience":"an api"}"#, #"token: field "audience""#),
        (#"{"op":"token","id":"t","account":"w","audience":"\#(String(repeating: "a", count: TokenScope.maximumLength + 1))"}"#, "audience"),
        (#"{"op":"refresh","id":"t"}"#, #"refresh: "account""#), (#"{"op":"logout","id":"t"}"#, #"logout: "account""#),
        (#"{"op":"import","id":"t","account":"w"}"#, #"import: "refresh_token""#),
        (#"{"op":"import","id":"t","account":"w","refresh_token":"  "}"#, #"import: "refresh_token""#),
        (#"{"op":"import","id":"t","account":"w","refresh_token":"r","expires_at":"tomorrow"}"#, #"import: "expires_at""#),
        (#"{"op":"login","id":"t","account":"w"}"#, #"login: "method""#), (#"{"op":"login","id":"t","account":"w","method":"pigeon"}"#, #"login: "method""#),
        (#"{"op":"login","id":"t","account":"w","method":"email","email":"a@example.com"}"#, #"login: "secret""#),
        (#"{"op":"login","id":"t","account":"w","method":"email","secret":"pw"}"#, #"login: "email""#),
        (#"{"op":"login","id":"t","account":"w","method":"custom_token","secret":" "}"#, #"login: "secret""#),
        (#"{"op":"login","id":"t","account":"w","method":"anonymous","create":true}"#, #"login: "create""#),
        (#"{"op":"login","id":"t","account":"w","method":"device","timeout":0}"#, #"login: "timeout""#),
        (#"{"op":"login","id":"t","account":"w","method":"device","timeout":1801}"#, #"login: "timeout""#),
        (#"{"op":"account","id":"t","account":"w"}"#, #"account: "action""#), (#"{"op":"account","id":"t","account":"w","action":"frob"}"#, #"account: "action""#),
        (#"{"op":"account","id":"t","account":"w","action":"upgrade","secret":"pw"}"#, #"account: "email""#),
        (#"{"op":"account","id":"t","account":"w","action":"upgrade","email":"a@example.com"}"#, #"account: "secret""#),
        (#"{"op":"account","id":"t","account":"w","action":"upgrade","method":"fax"}"#, #"account: "method""#),
        (#"{"op":"account","id":"t","account":"w","action":"upgrade","method":"google","timeout":0}"#, #"account: "timeout""#),
        (#"{"op":"account","id":"t","action":"show"}"#, #"account: "account""#),
        (#"{"op":"login","id":"t","account":"w","method":"idp"}"#, #"login: "idp""#),
        (#"{"op":"login","id":"t","account":"w","method":"idp","idp":"Microsoft.com"}"#, #"login: "idp""#),
        (#"{"op":"login","id":"t","account":"w","method":"idp","idp":"microsoft.com&providerId=x"}"#, #"login: "idp""#),
        (#"{"op":"login","id":"t","account":"w","method":"idp","idp":"password"}"#, #"login: "idp""#),
        (#"{"op":"login","id":"t","account":"w","method":"google","idp":"github.com"}"#, #"login: "idp""#),
        (#"{"op":"login","id":"t","account":"w","method":"anonymous","idp":"github.com"}"#, #"login: "idp""#),
        (#"{"op":"login","id":"t","account":"w","method":"browser","device":true}"#, #"login: "device""#),
        (#"{"op":"account","id":"t","account":"w","action":"upgrade","method":"idp"}"#, #"account: "idp""#),
        (#"{"op":"account","id":"t","account":"w","action":"upgrade","email":"a@example.com","secret":"pw","device":true}"#, #"account: "device""#),
    ])
    func aFieldThatBreaksItsOpsRuleIsNamed(_ line: String, _ message: String) async {
        await expectBadRequest(line, id: .string("t"), mentions: message)
    }

    @Test func aMissingOpIsNamed() async {
        await expectBadRequest(#"{"id":"t7"}"#, id: .string("t7"), mentions: "op")
        await expectBadRequest("{}", mentions: "op")
    }

    @Test func trailingGarbageIsABadRequest() async {
        for line in [#"{"op":"hello"} x"#, #"{"op":"hello"}{"op":"hello"}"#, #"{"op":"hello"},"#, "{\"op\":\"hello\"}\u{0}"] {
            await expectBadRequest(line, mentions: "JSON")
        }
    }

    @Test func jsonThatIsNotAnObjectIsABadRequest() async {
        for line in ["[1,2,3]", #""hello""#, "1", "null", "true", "", " "] {
            await expectBadRequest(line, mentions: "request")
        }
    }

    /// A UTF-8 byte-order mark before the object is allowed (RFC 8259 lets a parser ignore it),
    /// and so is whitespace around it.
    @Test func aByteOrderMarkAndSurroundingWhitespaceAreAccepted() async {
        let stub = StubbedHandler()
        for bytes in [[0xEF, 0xBB, 0xBF] + Array(#"{"op":"hello","id":1}"#.utf8), Array(" \t{\"op\":\"hello\",\"id\":1} ".utf8)] {
            #expect(await stub.respond(bytes: bytes).id == .number(1))
        }
    }

    /// Unknown ops and a known one misspelt (ops are case-sensitive): `unsupported_op`, not a
    /// guess; unknown fields are ignored for forward compatibility.
    @Test func unknownOpsAreUnsupportedAndUnknownFieldsIgnored() async {
        let stub = StubbedHandler()
        for (line, id) in [(#"{"op":"frobnicate","id":7}"#, RequestID.number(7)), (#"{"op":"Token","account":"work","id":8}"#, .number(8))] {
            let response = await stub.respond(line)
            #expect(response.error?.code == .unsupportedOp && response.id == id)
        }
        #expect(await stub.respond(#"{"op":"hello","future_field":{"x":[1]},"id":true}"#).id == .bool(true))
        #expect(stub.engine.calls.isEmpty)
    }

    /// `id` is echoed as it came: a string, a whole or fractional number, a boolean.
    @Test func theIDIsEchoedAsSent() async {
        let stub = StubbedHandler()
        for (text, id) in [(#""x""#, RequestID.string("x")), ("7", .number(7)), ("-2.5", .number(-2.5)), ("false", .bool(false))] {
            let response = await stub.respond(#"{"op":"hello","id":\#(text)}"#)
            #expect(response.id == id)
            #expect(String(decoding: WireCoding.encodeLine(response), as: UTF8.self).contains(#""id":\#(text)"#))
        }
    }
}
