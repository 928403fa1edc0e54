import Testing
import TokendCore
@testable import TokendProtocol

@Suite struct LineFramerTests {
    @Test func linesFedByteByByte() throws {
        var framer = LineFramer()
        var lines: [String] = []
        for byte in Array("{\"op\":\"hello\"}\r\n\n{\"op\":\"list\"}\n{\"op\"".utf8) {
            framer.append([byte])
            while let line = try framer.nextLine() { lines.append(String(decoding: line, as: UTF8.self)) }
        }
        #expect(lines == [#"{"op":"hello"}"#, #"{"op":"list"}"#])
        #expect(framer.pendingByteCount == 5)
    }

    @Test func aLineAtTheCapPassesOneByteMoreFails() throws {
        var framer = LineFramer(maximumLineLength: 8)
        framer.append(Array("12345678\n".utf8))
        #expect(try framer.nextLine() == Array("12345678".utf8))
        framer.append(Array("123456789".utf8))
        #expect(throws: LineFramer.Failure.lineTooLong) { try framer.nextLine() }
        #expect(framer.pendingByteCount == 0, "memory is released at once")
        framer.append(Array("\nok\n".utf8))
        #expect(throws: LineFramer.Failure.lineTooLong) { try framer.nextLine() }
    }

    @Test func oneMebibyteLineIsRefusedWithoutHoldingIt() {
        var framer = LineFramer()
        let chunk = [UInt8](repeating: UInt8(ascii: "a"), count: 4096)
        var failed = false
        for _ in 0..<256 where !failed {
            framer.append(chunk)
            failed = (try? framer.nextLine()) == nil && framer.pendingByteCount == 0
        }
        #expect(failed)
    }
}

@Suite struct WireCodingTests {
    @Test func requestFieldsDecodeAndUnknownFieldsAreIgnored() throws {
        let line = Array(#"{"op":"token","id":7,"account":"work","min_valid":30,"kind":"id","future":{"x":1}}"#.utf8)
        let request = WireCoding.decodeRequest(line)
        #expect(try request.command.get() == .token(TokenArgs(account: "work", minValid: 30, kind: .id)))
        #expect(request.id == .number(7))
    }

    @Test func wrongTypeNamesTheFieldAndKeepsTheID() {
        guard case .failure(let failure) = WireCoding.decodeFields(Array(#"{"op":"token","id":"a1","min_valid":"soon"}"#.utf8)) else {
            Issue.record("expected failure"); return
        }
        #expect(failure.message.contains("min_valid"))
        #expect(failure.id == .string("a1"))
    }

    /// Issue 45: an object or an array as `id` was answered "must be a boolean" (the last type tried).
    @Test(arguments: [#"{"op":"hello","id":{"x":1}}"#, #"{"op":"hello","id":[1]}"#])
    func anUnusableIDSaysWhatAnIDMayBe(text: String) {
        guard case .failure(let failure) = WireCoding.decodeFields(Array(text.utf8)) else { Issue.record("expected failure"); return }
        #expect(failure.message == #"field "id" must be a string, a number or a boolean (any JSON scalar)"#, "\(failure.message)")
    }

    @Test(arguments: ["garbage", "[1,2]", "{\"id\":1}", "\u{FF}\u{FE}"])
    func garbageIsABadRequest(text: String) {
        guard case .failure = WireCoding.decodeFields(Array(text.utf8)) else { Issue.record("expected failure"); return }
    }

    @Test func invalidUTF8IsABadRequest() {
        guard case .failure = WireCoding.decodeFields([0x7B, 0x22, 0xC3, 0x28, 0x22, 0x7D]) else { Issue.record("expected failure"); return }
    }

    @Test func integerIDsEchoAsIntegers() {
        var response = Response(id: .number(7))
        response.token = "t"
        let text = String(decoding: WireCoding.encodeLine(response), as: UTF8.self)
        #expect(text == "{\"id\":7,\"ok\":true,\"token\":\"t\"}\n")
    }
}

@Suite struct TimestampTests {
    @Test func formatsUTCWithWholeSeconds() {
        #expect(Timestamp.format(Date(timeIntervalSince1970: 1_800_000_000.9)) == "2027-01-15T08:00:00Z")
    }

    /// Issue 8, item 2: an absurd instant clamps instead of trapping in the `time_t` conversion.
    @Test func absurdInstantsClampInsteadOfTrapping() {
        #expect(Timestamp.format(Date(timeIntervalSince1970: 1e300)) == "9999-12-31T23:59:59Z")
        #expect(Timestamp.format(Date(timeIntervalSince1970: -1e300)) == "1970-01-01T00:00:00Z")
    }

    @Test func parsesWhatItFormatsAndOffsets() {
        #expect(Timestamp.parse("2027-01-15T08:00:00Z") == Date(timeIntervalSince1970: 1_800_000_000))
        #expect(Timestamp.parse("2027-01-15T09:00:00+01:00") == Date(timeIntervalSince1970: 1_800_000_000))
        #expect(Timestamp.parse("2027-01-15T08:00:00.5Z") == Date(timeIntervalSince1970: 1_800_000_000.5))
        #expect(Timestamp.parse("yesterday") == nil)
        #expect(Timestamp.parse("2027-13-15T08:00:00Z") == nil)
    }

    @Test func socketPathResolution() throws {
        #expect(try SocketPath.resolve(explicit: nil, environment: ["XDG_RUNTIME_DIR": "/run/user/1"]) == "/run/user/1/tokend/tokend.sock")
        #expect(try SocketPath.resolve(explicit: nil, environment: ["XDG_RUNTIME_DIR": "/r", "TOKEND_SOCKET": "/x.sock"]) == "/x.sock")
        #expect(try SocketPath.resolve(explicit: "/y.sock", environment: ["TOKEND_SOCKET": "/x.sock"]) == "/y.sock")
        #expect(throws: SocketPath.Unresolvable.self) { try SocketPath.resolve(explicit: nil, environment: [:]) }
    }
}
