import TokendCore

/// JSON Lines encoding shared by both ends: one object per line, no pretty printing, keys sorted
/// so output is stable for humans diffing it and for tests.
public enum WireCoding {
    /// A response's line: a plain `token` answer by hand (`TokenExchangeCoding.replyLine`, the
    /// same bytes), everything else through the encoder below.
    public static func encodeLine(_ response: Response) -> [UInt8] {
        TokenExchangeCoding.replyLine(response) ?? encoded(response)
    }

    public static func encodeLine<Value: Encodable>(_ value: Value) -> [UInt8] {
        encoded(value)
    }

    private static func encoded<Value: Encodable>(_ value: Value) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do {
            var bytes = Array(try encoder.encode(value))
            bytes.append(UInt8(ascii: "\n"))
            return bytes
        } catch {
            // Our own types always encode; if one ever does not, answer with an internal error
            // rather than dropping the reply.
            return Array(#"{"ok":false,"error":{"code":"internal","message":"response could not be encoded"}}"#.utf8) + [10]
        }
    }

    /// Decodes a request line, once: a plain `token` line by hand (`TokenExchangeCoding.request`),
    /// any other through JSONDecoder, then checks its fields into a `Command`. On failure the
    /// error names what was wrong (never the line itself, which may hold a token), with the `id`
    /// when it could still be read.
    public static func decodeRequest(_ line: [UInt8]) -> DecodedRequest {
        switch decodeFields(line) {
        case .success(let fields): DecodedRequest(fields)
        case .failure(let failure): DecodedRequest(id: failure.id, command: .failure(TokendError(.badRequest, failure.message)))
        }
    }

    /// The line's fields, each of its table type (`RequestField`), not yet checked for their op.
    public static func decodeFields(_ line: [UInt8]) -> Result<RequestFields, RequestDecodingFailure> {
        if let fields = TokenExchangeCoding.request(line) { return .success(fields) }  // the common line, by hand
        let data = Data(line)
        do {
            return .success(try JSONDecoder().decode(RequestFields.self, from: data))
        } catch {
            let id = (try? JSONDecoder().decode(IDOnly.self, from: data))?.id
            return .failure(RequestDecodingFailure(id: id, message: describe(error)))
        }
    }

    public struct RequestDecodingFailure: Error, Sendable {
        public var id: RequestID?
        public var message: String
    }

    private struct IDOnly: Decodable { var id: RequestID? }

    private static func describe(_ error: any Error) -> String {
        guard let error = error as? DecodingError else { return "the request is not a JSON object" }
        func path(_ context: DecodingError.Context) -> String {
            let keys = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }
            return keys.isEmpty ? "the request" : "field \"\(keys.joined(separator: "."))\""
        }
        switch error {
        case .keyNotFound(let key, _): return "field \"\(key.stringValue)\" is required"
        case .typeMismatch(let type, let context): return "\(path(context)) must be \(typeName(type))"
        case .valueNotFound(let type, let context): return "\(path(context)) must be \(typeName(type)), not null"
        case .dataCorrupted(let context):
            return context.codingPath.isEmpty ? "the request is not valid JSON (one UTF-8 JSON object per line)" : "\(path(context)) has an invalid value"
        @unknown default: return "the request could not be read"
        }
    }

    private static func typeName(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: "a string"
        case is Double.Type, is Int.Type: "a number"
        case is Bool.Type: "a boolean"
        case is RequestID.Type: "a string, a number or a boolean (any JSON scalar)"
        default: "of another type (see docs/protocol.md)"
        }
    }
}
