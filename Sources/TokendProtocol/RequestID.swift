import TokendCore

/// A request `id` as the client sent it: any JSON scalar, echoed back untouched.
public enum RequestID: Codable, Sendable, Equatable {
    case string(String)
    case number(Double)
    case bool(Bool)

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let string = try? container.decode(String.self) {
            self = .string(string)
        } else if let number = try? container.decode(Double.self) {
            self = .number(number)
        } else if let bool = try? container.decode(Bool.self) {
            self = .bool(bool)
        } else {
            // Not the last try's "must be a boolean": the client is told what an id may be.
            throw DecodingError.typeMismatch(
                RequestID.self, .init(codingPath: decoder.codingPath, debugDescription: "an id is a string, a number or a boolean"))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .string(let value): try container.encode(value)
        case .number(let value):
            // Whole numbers go back as integers: a client that sent 7 must not get 7.0.
            if value.rounded() == value, abs(value) < 9e15 { try container.encode(Int64(value)) } else { try container.encode(value) }  // conversion: whole and below 2^53, checked on this line
        case .bool(let value): try container.encode(value)
        }
    }
}
