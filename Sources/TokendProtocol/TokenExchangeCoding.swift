import TokendCore

/// The `token` request and its successful reply, coded by hand for `tokenctl token`'s shell path.
///
/// A whole `tokenctl token` is a few hundred thousand instructions of its own; JSONEncoder's and
/// JSONDecoder's first use instantiate generic Codable metadata at run time, 0.85 M instructions
/// (callgrind), more than the rest of the call. Anything outside the plain shapes below returns
/// nil, and the caller uses `WireCoding` / `JSONDecoder`, which stay the one definition of the
/// protocol and make every error message.
public enum TokenExchangeCoding {
    /// The line for a `token` command's fields (`Command.fields(id:)`), its keys in the encoder's
    /// order (`TokenArgs.fields`). Nil for another op, a field outside that list, an `id` other than a whole
    /// number or a number that is not finite, which are the encoder's.
    public static func requestLine(_ fields: RequestFields) -> [UInt8]? {
        guard fields.string(.op) == Op.token.rawValue else { return nil }
        var line: [UInt8] = []
        line.reserveCapacity(96 + (fields.string(.account)?.utf8.count ?? 0))
        var written = 0
        for field in TokenArgs.fields {
            guard let value = fields[field] else { continue }
            written += 1
            appendKey(field, to: &line)
            switch value {
            case .string(let text): appendString(text, to: &line)
            case .tokenKind(let kind): appendString(kind.rawValue, to: &line)
            case .number(let number):
                guard let text = plainNumber(number) else { return nil }
                line.append(contentsOf: text.utf8)
            case .scalar(let id):
                guard case .number(let value) = id, let number = wholeNumber(value) else { return nil }
                line.append(contentsOf: number.utf8)
            case .boolean, .strings: return nil
            }
        }
        guard written == fields.fields.count else { return nil }
        line.append(contentsOf: "}\n".utf8)
        return line
    }

    /// `requestLine` of the `token` command `tokenctl token ACCOUNT` sends: `account`, `id`,
    /// `op` and `timeout`, no other field, in `TokenArgs.fields`' order. Written without the
    /// command's `RequestFields`, whose generic storage the shell path would instantiate for one
    /// line; the same bytes (TokenExchangeCodingTests).
    public static func plainTokenLine(account: String, id: Int, timeout: Int) -> [UInt8] {
        var line: [UInt8] = []
        line.reserveCapacity(96 + account.utf8.count)
        for field in TokenArgs.fields {
            switch field {
            case .account:
                appendKey(field, to: &line)
                appendString(account, to: &line)
            case .id, .timeout:
                appendKey(field, to: &line)
                line.append(contentsOf: String(field == .id ? id : timeout).utf8)
            case .op:
                appendKey(field, to: &line)
                appendString(Op.token.rawValue, to: &line)
            default:
                continue
            }
        }
        line.append(contentsOf: "}\n".utf8)
        return line
    }

    /// A reply that is one flat object of only the `TokenReplyField`s, `id` a whole number and
    /// strings free of escapes: what a `token` answer looks like. Anything else (an error object,
    /// an escape, another field) is nil.
    public static func reply(_ line: [UInt8]) -> Response? {
        var scanner = FlatObjectScanner(line)
        var response = Response(ok: false)
        // Each field once: a repeated key is the decoder's to judge. A bit set, not an array:
        // this runs once per `tokenctl token` process, where each generic type costs its
        // metadata's instantiation.
        var seen: UInt8 = 0
        guard scanner.take(UInt8(ascii: "{")) else { return nil }
        if scanner.take(UInt8(ascii: "}")) { return nil }  // no `ok`: the decoder says what is wrong
        repeat {
            guard let key = scanner.string(), let field = TokenReplyField.named(key), seen & field.bit == 0, scanner.take(UInt8(ascii: ":"))
            else { return nil }
            seen |= field.bit
            switch field {
            case .ok:
                guard let value = scanner.bool() else { return nil }
                response.ok = value
            case .id:
                guard let value = scanner.integer() else { return nil }
                response.id = .number(Double(value))
            case .expiresIn:
                guard let value = scanner.integer() else { return nil }
                response.expiresIn = value
            case .account:
                guard let value = scanner.string() else { return nil }
                response.account = value
            case .token:
                guard let value = scanner.string() else { return nil }
                response.token = value
            case .expiresAt:
                guard let value = scanner.string() else { return nil }
                response.expiresAt = value
            case .kind:
                guard let value = scanner.string(), let kind = TokenKind(rawValue: value) else { return nil }
                response.kind = kind
            }
        } while scanner.take(UInt8(ascii: ","))
        guard scanner.take(UInt8(ascii: "}")), scanner.atEnd, seen & TokenReplyField.ok.bit != 0 else { return nil }
        return response
    }

    /// The daemon's side of the same exchange: a `token` request that is one flat object of only
    /// `TokenArgs.fields`, `op` "token", `id` and the numbers integers, the rest strings free of
    /// escapes — what tokenctl and most scripts send — read without JSONDecoder, whose generic
    /// Codable work was a quarter of the daemon's time per request (perf, issue 20). Anything
    /// else is nil, and `WireCoding.decodeRequest` judges it.
    public static func request(_ line: [UInt8]) -> RequestFields? {
        var scanner = FlatObjectScanner(line)
        var fields = RequestFields()
        guard scanner.take(UInt8(ascii: "{")) else { return nil }
        repeat {
            // Each field once: a repeated key is the decoder's to judge.
            guard let key = scanner.string(), let field = tokenField(named: key), fields[field] == nil, scanner.take(UInt8(ascii: ":"))
            else { return nil }
            switch field.type {
            case .string:
                guard let value = scanner.string() else { return nil }
                fields.set(field, value)
            case .number:
                guard let value = scanner.integer() else { return nil }
                fields.set(field, Double(value))
            case .tokenKind:
                guard let value = scanner.string(), let kind = TokenKind(rawValue: value) else { return nil }
                fields.set(field, kind)
            case .scalar:
                guard let value = scanner.integer() else { return nil }
                fields.set(field, RequestID.number(Double(value)))
            case .boolean, .strings:
                return nil
            }
        } while scanner.take(UInt8(ascii: ","))
        guard scanner.take(UInt8(ascii: "}")), scanner.atEnd, fields.string(.op) == Op.token.rawValue else { return nil }
        return fields
    }

    /// The `token` field a key names: by direct comparison, a fifth of `init(rawValue:)`'s cost
    /// (the synthesized one goes through `_findStringSwitchCase`; callgrind).
    private static func tokenField(named key: String) -> RequestField? {
        for field in TokenArgs.fields where field.rawValue == key { return field }
        return nil
    }

    /// The line for a `token` answer of only the `TokenReplyField`s (`id` a whole number), byte
    /// for byte what `WireCoding.encodeLine` writes (sorted keys, slashes unescaped); nil for
    /// anything else, or a string that needs escaping.
    public static func replyLine(_ response: Response) -> [UInt8]? {
        var covered = Response(id: response.id, ok: response.ok)
        covered.account = response.account
        covered.token = response.token
        covered.kind = response.kind
        covered.expiresAt = response.expiresAt
        covered.expiresIn = response.expiresIn
        guard covered == response, response.ok, let account = response.account, let token = response.token,
            let kind = response.kind, let expiresAt = response.expiresAt, let expiresIn = response.expiresIn,
            isPlain(account), isPlain(token), isPlain(expiresAt)
        else { return nil }
        var line: [UInt8] = []
        line.reserveCapacity(128 + token.utf8.count + account.utf8.count)
        for field in TokenReplyField.inOrder {
            switch field {
            case .account:
                appendKey(field, to: &line)
                appendPlain(account, to: &line)
            case .expiresAt:
                appendKey(field, to: &line)
                appendPlain(expiresAt, to: &line)
            case .expiresIn:
                appendKey(field, to: &line)
                line.append(contentsOf: String(expiresIn).utf8)
            case .id:
                guard let id = response.id else { continue }
                guard case .number(let value) = id, let number = wholeNumber(value) else { return nil }
                appendKey(field, to: &line)
                line.append(contentsOf: number.utf8)
            case .kind:
                appendKey(field, to: &line)
                appendPlain(kind.rawValue, to: &line)
            case .ok:
                appendKey(field, to: &line)
                line.append(contentsOf: "true".utf8)
            case .token:
                appendKey(field, to: &line)
                appendPlain(token, to: &line)
            }
        }
        line.append(contentsOf: "}\n".utf8)
        return line
    }

    /// `"key":` after `{` for the first field and `,` for the others. Keys are plain ASCII.
    private static func appendKey<Field: RawRepresentable<String>>(_ field: Field, to line: inout [UInt8]) {
        line.append(line.isEmpty ? UInt8(ascii: "{") : UInt8(ascii: ","))
        appendPlain(field.rawValue, to: &line)
        line.append(UInt8(ascii: ":"))
    }

    /// A string `isPlain` holds, quoted: its bytes as they are, in one copy (a token is most of
    /// an answer's bytes).
    private static func appendPlain(_ value: String, to line: inout [UInt8]) {
        line.append(UInt8(ascii: "\""))
        line.append(contentsOf: value.utf8)
        line.append(UInt8(ascii: "\""))
    }

    /// A string the encoder writes as it is: printable ASCII without a quote or a backslash
    /// (slashes are not escaped: `.withoutEscapingSlashes`).
    private static func isPlain(_ value: String) -> Bool {
        func plain(_ byte: UInt8) -> Bool { byte >= 0x20 && byte < 0x80 && byte != UInt8(ascii: "\"") && byte != UInt8(ascii: "\\") }
        // Over the string's own buffer: a token is most of an answer, and iterating the UTF-8
        // view byte by byte cost ~35 instructions a byte (callgrind), several times this loop.
        return value.utf8.withContiguousStorageIfAvailable { $0.allSatisfy(plain) } ?? value.utf8.allSatisfy(plain)
    }

    private static func appendString(_ value: String, to line: inout [UInt8]) {
        line.append(UInt8(ascii: "\""))
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"):
                line.append(UInt8(ascii: "\\"))
                line.append(byte)
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                line.append(contentsOf: #"\u00"#.utf8)
                line.append(hex[Int(byte >> 4)])  // conversion: a nibble
                line.append(hex[Int(byte & 0xF)])  // conversion: a nibble
            default:
                line.append(byte)
            }
        }
        line.append(UInt8(ascii: "\""))
    }

    /// Whole numbers as integers (what a person wrote, `60`, goes out as `60`), others in Swift's
    /// shortest round-trip form, which is valid JSON; nil for a non-finite value.
    private static func plainNumber(_ value: Double) -> String? {
        guard value.isFinite else { return nil }
        return wholeNumber(value) ?? "\(value)"
    }

    /// 9e15: below 2^53, where every whole Double is exact as an Int64.
    private static func wholeNumber(_ value: Double) -> String? {
        guard value.rounded() == value, abs(value) < 9e15 else { return nil }
        return String(Int64(value))  // conversion: whole and below 2^53, checked above
    }
}

/// Reads the tokens of a flat JSON object; every method returns nil (or false) rather than
/// guessing at anything it does not handle.
private struct FlatObjectScanner {
    let bytes: [UInt8]
    var index = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var atEnd: Bool {
        mutating get {
            skipSpace()
            return index == bytes.count
        }
    }

    mutating func skipSpace() {
        while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
    }

    mutating func take(_ byte: UInt8) -> Bool {
        skipSpace()
        guard index < bytes.count, bytes[index] == byte else { return false }
        index += 1
        return true
    }

    /// A string without escapes or control characters; nil otherwise (including invalid UTF-8).
    mutating func string() -> String? {
        guard take(UInt8(ascii: "\"")) else { return nil }
        let start = index
        var ascii = true
        while index < bytes.count, bytes[index] != UInt8(ascii: "\"") {
            guard bytes[index] != UInt8(ascii: "\\"), bytes[index] >= 0x20 else { return nil }
            ascii = ascii && bytes[index] < 0x80
            index += 1
        }
        guard index < bytes.count else { return nil }
        defer { index += 1 }
        // ASCII is valid UTF-8 as it stands: decoded directly, without the generic validation
        // (a token is most of a reply's bytes).
        if ascii { return bytes[start..<index].withUnsafeBufferPointer { String(decoding: $0, as: UTF8.self) } }
        return String(validating: bytes[start..<index], as: UTF8.self)
    }

    mutating func bool() -> Bool? {
        skipSpace()
        // Two comparisons, not a loop over (word, value) pairs: an array of tuples is generic
        // metadata built at run time, in a process that reads one reply.
        if bytes[index...].starts(with: "true".utf8) {
            index += 4
            return true
        }
        if bytes[index...].starts(with: "false".utf8) {
            index += 5
            return false
        }
        return nil
    }

    /// An optional minus and 1 to 15 digits (no fraction, no exponent: those are the decoder's).
    mutating func integer() -> Int? {
        skipSpace()
        let negative = index < bytes.count && bytes[index] == UInt8(ascii: "-")
        if negative { index += 1 }
        var value = 0
        var digits = 0
        while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) {
            // Past 15 digits the number is the decoder's (and would overflow here): only counted.
            if digits < 15 { value = value * 10 + Int(bytes[index] - UInt8(ascii: "0")) }  // conversion: a checked ASCII digit
            digits += 1
            index += 1
        }
        guard (1...15).contains(digits), digits == 1 || bytes[index - digits] != UInt8(ascii: "0") else { return nil }
        if index < bytes.count, [UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E")].contains(bytes[index]) { return nil }
        return negative ? -value : value
    }
}

/// A field of a `token` request's plain answer, sorted by wire name as the encoder writes them;
/// anything else in an answer (an error, a warning) is the Codable path's.
public enum TokenReplyField: String, CaseIterable, Sendable {
    case account
    case expiresAt = "expires_at"
    case expiresIn = "expires_in"
    case id, kind, ok, token

    /// `allCases`, built once: the codec walks it for every answer it writes.
    static let inOrder = allCases

    /// The field's bit in `TokenExchangeCoding.reply`'s set of fields seen (seven fields).
    var bit: UInt8 {
        switch self {
        case .account: 1
        case .expiresAt: 2
        case .expiresIn: 4
        case .id: 8
        case .kind: 16
        case .ok: 32
        case .token: 64
        }
    }

    /// The field a key names, by direct comparison (see `TokenExchangeCoding.tokenField`).
    static func named(_ key: String) -> Self? {
        for field in inOrder where field.rawValue == key { return field }
        return nil
    }
}
