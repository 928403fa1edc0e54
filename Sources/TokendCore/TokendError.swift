/// An error as callers of the daemon see it: a pinned code (docs/protocol.md) and a message that
/// says what to do next. Messages never carry a secret.
public struct TokendError: Error, Sendable, Equatable, Codable, CustomStringConvertible {
    public struct Code: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public init(from decoder: any Decoder) throws { rawValue = try decoder.singleValueContainer().decode(String.self) }
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(rawValue)
        }
        public var description: String { rawValue }

        public static let badRequest = Code(rawValue: "bad_request")
        public static let tooLarge = Code(rawValue: "too_large")
        public static let unsupportedOp = Code(rawValue: "unsupported_op")
        public static let unknownAccount = Code(rawValue: "unknown_account")
        public static let needsLogin = Code(rawValue: "needs_login")
        public static let unavailable = Code(rawValue: "unavailable")
        public static let keyringLocked = Code(rawValue: "keyring_locked")
        public static let keyringUnavailable = Code(rawValue: "keyring_unavailable")
        public static let configError = Code(rawValue: "config_error")
        /// A consumer socket's policy refuses the op, kind, audience, scopes or `min_valid` asked
        /// (README, "Consumers"); the message says what it allows.
        public static let forbidden = Code(rawValue: "forbidden")
        public static let `internal` = Code(rawValue: "internal")
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }
}
