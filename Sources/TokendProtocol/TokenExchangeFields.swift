// The fields of the `token` exchange, named once (docs/protocol.md, "token"): the hand-written
// codec (`TokenExchangeCoding`) reads and writes exactly these, in this order; tokenctl maps its
// options onto them (`TokenFields`); `TokenArgs` holds them. A field the codec does not list is
// left to the Codable path, so a field added to `Request` or `Response` without a row here is
// never silently dropped, and a row added here is a compile error in every switch over it.

/// A field of a `token` request.
public enum TokenRequestField: String, CaseIterable, Sendable {
    // Sorted by wire name: the order JSONEncoder's `.sortedKeys` writes, which the hand-written
    // line keeps, so both write the same bytes.
    case account, audience, id, kind
    case minValid = "min_valid"
    case op, scope, timeout

    /// `allCases`, built once: the codec walks it for every line it writes.
    static let inOrder = allCases

    /// tokenctl's option that sets the field; nil for those it sets itself (the account is an
    /// argument, `id` and `op` are fixed).
    public var option: String? {
        switch self {
        case .audience: "--audience"
        case .kind: "--kind"
        case .minValid: "--min-valid"
        case .scope: "--scope"
        case .timeout: "--timeout"
        case .account, .id, .op: nil
        }
    }

    /// The field `option` sets; nil for an option that is no field of the request.
    public init?(option: String) {
        for field in Self.allCases where field.option == option {
            self = field
            return
        }
        return nil
    }
}

/// A field of a `token` request's plain answer; anything else in an answer (an error, a warning)
/// is the Codable path's.
public enum TokenReplyField: String, CaseIterable, Sendable {
    // Sorted by wire name, as for the request.
    case account
    case expiresAt = "expires_at"
    case expiresIn = "expires_in"
    case id, kind, ok, token

    /// `allCases`, built once: the codec walks it for every answer it writes.
    static let inOrder = allCases
}

/// A field of the `token` exchange, request or answer.
protocol TokenExchangeField: RawRepresentable<String> {
    /// Every field in wire order, built once.
    static var inOrder: [Self] { get }
}

extension TokenExchangeField {
    /// The field a key names: `init(rawValue:)` by direct comparison, a fifth of its cost
    /// (the synthesized one goes through `_findStringSwitchCase`; callgrind).
    static func named(_ key: String) -> Self? {
        for field in inOrder where field.rawValue == key { return field }
        return nil
    }
}

extension TokenRequestField: TokenExchangeField {}
extension TokenReplyField: TokenExchangeField {}
