import Foundation

/// JSON in and out for the fake: one encoder configuration for every body it writes.
enum FakeJSON {
    /// Sorted keys make bodies byte-stable for tests; unescaped slashes keep `iss` readable.
    /// `snakeCase`: Swift's names in snake_case and dates in seconds, for the control plane.
    static func encode(_ value: some Encodable, snakeCase: Bool = false) -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        if snakeCase { (encoder.keyEncodingStrategy, encoder.dateEncodingStrategy) = (.convertToSnakeCase, .secondsSince1970) }
        do {
            return try encoder.encode(value)
        } catch {
            // Only the fake's own structs of strings, numbers and dictionaries come here; they
            // cannot fail to encode, so a failure is a bug in the fake, not in the code under test.
            preconditionFailure("FakeFirebase could not encode its own JSON: \(error)")
        }
    }

    /// Decodes a request body; an empty body decodes as `{}` (signUp with no body is anonymous).
    static func decode<T: Decodable>(_ type: T.Type, from body: [UInt8]) throws(BodyError) -> T {
        let isBlank = body.allSatisfy { [0x20, 0x09, 0x0A, 0x0D].contains($0) }  // JSON's four whitespace bytes
        let bytes = isBlank ? Array("{}".utf8) : body
        do {
            return try JSONDecoder().decode(T.self, from: Data(bytes))
        } catch {
            throw BodyError.invalidJSON
        }
    }
}

/// A request body the fake could not read.
enum BodyError: Error, Equatable {
    case invalidJSON
}
