import TokendCore

/// Every field a request line may carry (docs/protocol.md), named once: its wire name (the raw
/// value), its JSON type, its bound, and for a `token` field the tokenctl option that sets it.
/// The decoder checks each present field's type in this order (the first wrong one is named, for
/// every op: `{"op":"hello","min_valid":"60"}` is refused too); each op's arguments type reads and
/// writes the fields it uses by case (`TokenArgs`, `LoginArgs`, …); the hand-written `token` codec
/// and tokenctl's fast path walk the rows. A new field is a row here and its place in one
/// arguments type.
public enum RequestField: String, CaseIterable, Sendable, CodingKey {
    case op, id, account
    /// `token`: seconds the returned token must stay valid (default 60).
    case minValid = "min_valid"
    /// `token`: `id` or `access` (default: the provider's, see the README).
    case kind
    /// `token`: space-separated scopes to narrow the access token to; `audience`: the API it is for.
    case scope, audience
    /// Seconds to wait for a refresh (or, `login`, for the user).
    case timeout
    /// `import`: the session to store (only the refresh token is required) and, RFC 3339, when
    /// its tokens expire if their JWT does not say.
    case refreshToken = "refresh_token"
    case idToken = "id_token"
    case accessToken = "access_token"
    case expiresAt = "expires_at"
    /// `login`, `account`: the sign-in method, the identity provider and its device grant, the
    /// email, sign-up instead of sign-in, a password, custom token or code (never logged or
    /// echoed), scopes to ask for.
    case method, idp, device, email, create, secret, scopes
    /// `account`: what to do, the delete's confirmation; `watch`, `account show`: profile fields.
    case action, confirm, profile
    /// A second factor's enrollment id, a pending sign-in's or enrollment's handle, a factor's name.
    case factor, handle, name
    /// `store`: the store a `move` takes the session to.
    case to

    /// A field's JSON type: what the decoder takes and the fast paths parse.
    public enum JSONType: Sendable {
        case string, number, boolean, strings, tokenKind
        /// `id`: any JSON scalar (`RequestID`).
        case scalar
    }

    public var type: JSONType {
        switch self {
        case .op, .account, .scope, .audience, .refreshToken, .idToken, .accessToken, .expiresAt, .method, .idp, .email, .secret, .action, .factor,
            .handle, .name, .to:
            .string
        case .minValid, .timeout: .number
        case .device, .create, .confirm, .profile: .boolean
        case .scopes: .strings
        case .kind: .tokenKind
        case .id: .scalar
        }
    }

    /// The values a number field may take, in seconds (nil: not a number). `min_valid`: a day;
    /// longer asks cannot be met by any provider we know. `timeout`: nothing should hold a
    /// connection longer than 300 s (a `login`'s own bound is `LoginArgs.maximumTimeout`).
    public var bound: ClosedRange<Double>? {
        switch self {
        case .minValid: 0...86_400
        case .timeout: 0...300
        default: nil
        }
    }

    /// tokenctl's option that sets a `token` field (`token`, `header`, `exec`, `exec-credential`);
    /// nil for the others (the account is an argument, `id` and `op` are fixed).
    public var option: String? {
        switch self {
        case .minValid: "--min-valid"
        case .kind: "--kind"
        case .scope: "--scope"
        case .audience: "--audience"
        case .timeout: "--timeout"
        default: nil
        }
    }

    /// The field `option` sets; nil for an option that is no field of the request.
    public init?(option: String) {
        guard let field = TokenArgs.fields.first(where: { $0.option == option }) else { return nil }
        self = field
    }

    /// `text` (an option's value) as this field's value: nil when it does not parse.
    public func value(parsing text: String) -> RequestFields.Value? {
        switch type {
        case .string: .string(text)
        case .number: Double(text).map(RequestFields.Value.number)
        case .tokenKind: TokenKind(rawValue: text).map(RequestFields.Value.tokenKind)
        case .boolean, .strings, .scalar: nil
        }
    }
}

/// One request line's fields, each of its table type: what the decoder reads (once per line,
/// by hand for a plain `token` line, else by JSONDecoder) and an op's arguments are checked from,
/// and what a command writes to be encoded.
public struct RequestFields: Sendable, Equatable, CustomStringConvertible {
    public enum Value: Sendable, Equatable {
        case string(String)
        case number(Double)
        case boolean(Bool)
        case strings([String])
        case tokenKind(TokenKind)
        case scalar(RequestID)
    }

    /// In the order read or written; a handful at most, so a scan beats hashing (the fast path
    /// builds one per `token` line).
    private(set) var entries: [(field: RequestField, value: Value)] = []

    public init() {}

    public subscript(field: RequestField) -> Value? {
        get { entries.first { $0.field == field }?.value }
        set {
            entries.removeAll { $0.field == field }
            if let newValue { entries.append((field, newValue)) }
        }
    }

    public var fields: [RequestField] { entries.map(\.field) }

    public func string(_ field: RequestField) -> String? { if case .string(let value)? = self[field] { value } else { nil } }
    public func number(_ field: RequestField) -> Double? { if case .number(let value)? = self[field] { value } else { nil } }
    public func boolean(_ field: RequestField) -> Bool? { if case .boolean(let value)? = self[field] { value } else { nil } }
    public func strings(_ field: RequestField) -> [String]? { if case .strings(let value)? = self[field] { value } else { nil } }
    public func tokenKind(_ field: RequestField) -> TokenKind? { if case .tokenKind(let value)? = self[field] { value } else { nil } }
    public var id: RequestID? { if case .scalar(let value)? = self[.id] { value } else { nil } }

    public mutating func set(_ field: RequestField, _ value: String?) { self[field] = value.map(Value.string) }
    public mutating func set(_ field: RequestField, _ value: Double?) { self[field] = value.map(Value.number) }
    public mutating func set(_ field: RequestField, _ value: Bool?) { self[field] = value.map(Value.boolean) }
    public mutating func set(_ field: RequestField, _ value: [String]?) { self[field] = value.map(Value.strings) }
    public mutating func set(_ field: RequestField, _ value: TokenKind?) { self[field] = value.map(Value.tokenKind) }
    public mutating func set(_ field: RequestField, _ value: RequestID?) { self[field] = value.map(Value.scalar) }

    /// The same fields with the same values, in whatever order.
    public static func == (lhs: RequestFields, rhs: RequestFields) -> Bool {
        lhs.entries.count == rhs.entries.count && lhs.entries.allSatisfy { rhs[$0.field] == $0.value }
    }

    /// Fields may carry tokens (`import`) and passwords (`login`): described by their names alone.
    public var description: String { "RequestFields(\(fields.map(\.rawValue).joined(separator: ",")))" }
}

extension RequestFields: Codable {
    /// Every field of the table, in its order, with its type: JSONDecoder's messages name the
    /// first that is wrong (`WireCoding.describe`). Unknown fields are ignored; a field given twice
    /// counts with its first value (JSONDecoder's rule).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: RequestField.self)
        set(.op, try container.decode(String.self, forKey: .op))
        for field in RequestField.allCases where field != .op {
            switch field.type {
            case .string: set(field, try container.decodeIfPresent(String.self, forKey: field))
            case .number: set(field, try container.decodeIfPresent(Double.self, forKey: field))
            case .boolean: set(field, try container.decodeIfPresent(Bool.self, forKey: field))
            case .strings: set(field, try container.decodeIfPresent([String].self, forKey: field))
            case .tokenKind: set(field, try container.decodeIfPresent(TokenKind.self, forKey: field))
            case .scalar: set(field, try container.decodeIfPresent(RequestID.self, forKey: field))
            }
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: RequestField.self)
        for (field, value) in entries {
            switch value {
            case .string(let value): try container.encode(value, forKey: field)
            case .number(let value): try container.encode(value, forKey: field)
            case .boolean(let value): try container.encode(value, forKey: field)
            case .strings(let value): try container.encode(value, forKey: field)
            case .tokenKind(let value): try container.encode(value, forKey: field)
            case .scalar(let value): try container.encode(value, forKey: field)
            }
        }
    }
}

/// Reads one request's fields for one op, throwing the `bad_request` that names a bad one: the
/// rules every op shares (each arguments type adds its own beside its fields).
public struct FieldReader: Sendable {
    public let op: Op
    public let fields: RequestFields

    public func failure(_ field: RequestField, _ rule: String) -> TokendError {
        TokendError(.badRequest, "\(op.rawValue): \"\(field.rawValue)\" \(rule)")
    }

    public func string(_ field: RequestField) -> String? { fields.string(field) }
    public func boolean(_ field: RequestField) -> Bool? { fields.boolean(field) }

    public func account() throws(TokendError) -> String {
        guard let name = fields.string(.account), !name.isEmpty else { throw failure(.account, "is required") }
        return name
    }

    /// A number of seconds within `range` (the field's bound by default); nil when left out.
    public func seconds(_ field: RequestField, in range: ClosedRange<Double>? = nil) throws(TokendError) -> Double? {
        guard let value = fields.number(field) else { return nil }
        let range = range ?? field.bound ?? 0...0
        guard value.isFinite, range.contains(value) else {
            throw failure(field, "must be a number of seconds from \(Int(saturating: range.lowerBound)) to \(Int(saturating: range.upperBound))")
        }
        return value
    }

    /// How long to wait for a refresh: `timeout`, else 30 s.
    public func timeout() throws(TokendError) -> Double {
        try seconds(.timeout) ?? Command.defaultTimeout
    }
}
