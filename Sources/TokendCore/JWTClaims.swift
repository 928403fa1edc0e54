/// The few claims of a JWT the daemon reads. Signatures are not checked: the token came over TLS
/// from its issuer, and only its timing and identity claims are used (docs/architecture.md, "Provider facts").
public struct JWTClaims: Sendable, Equatable {
    public var expiresAt: Date?
    public var issuedAt: Date?
    public var subject: String?
    public var email: String?
    public var issuer: String?
    /// `aud`, one string or a list of them (empty when absent or of another type).
    public var audience: [String] = []
    /// `azp`, `nbf`, `nonce`: what an OpenID Connect sign-in checks (OpenID Connect Core §3.1.3.7).
    public var authorizedParty: String?
    public var notBefore: Date?
    public var nonce: String?
    /// `tid`: the Microsoft Entra tenant that issued the token, which its multi-tenant issuer
    /// names in place of `{tenantid}` (see `IssuerTemplate`).
    public var tenantID: String?

    private struct Payload: Decodable {
        var exp: Double?
        var iat: Double?
        var sub: String?
        var email: String?
        var iss: String?
        var aud: Audience?
        var azp: String?
        var nbf: Double?
        var nonce: String?
        var tid: String?
    }

    /// `aud` as whatever it is: a string, a list of strings, or (anything else) nothing.
    private struct Audience: Decodable {
        var values: [String]
        init(from decoder: any Decoder) {
            let container = try? decoder.singleValueContainer()
            if let one = try? container?.decode(String.self) {
                values = [one]
            } else {
                values = (try? container?.decode([String].self)) ?? []
            }
        }
    }

    /// A compact JWT's header or payload decoded as `T`; nil unless the token has exactly three
    /// parts and that part is base64url JSON of that shape. The one place a token is taken apart:
    /// every reader of claims (this type, Firebase's, the ID-token check, the fakes) goes through it.
    public static func decode<T: Decodable>(_ type: T.Type, from token: String, part: Part = .payload) -> T? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let bytes = base64URLDecode(parts[part.rawValue]) else { return nil }
        return try? JSONDecoder().decode(type, from: bytes)
    }

    /// The base64url payload's bytes, for showing every claim as JSON.
    public static func payloadBytes(of token: String) -> Data? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { return nil }
        return base64URLDecode(parts[1])
    }

    public enum Part: Int, Sendable { case header = 0, payload = 1 }

    /// Nil when the token is not a JWT (opaque access tokens are normal in OAuth).
    public init?(token: String) {
        guard let payload = Self.decode(Payload.self, from: token) else { return nil }
        expiresAt = payload.exp.flatMap(Self.instant)
        issuedAt = payload.iat.flatMap(Self.instant)
        subject = payload.sub
        email = payload.email
        issuer = payload.iss
        audience = payload.aud?.values ?? []
        authorizedParty = payload.azp
        notBefore = payload.nbf.flatMap(Self.instant)
        nonce = payload.nonce
        tenantID = payload.tid
    }

    /// Claims after the year 9999 (or before 1970) are treated as absent: no real token carries
    /// one, and such an instant cannot be formatted or counted in whole seconds (an imported
    /// `exp` of 1e300 crashed the daemon on the next `status`; found by the fuzz corpus).
    public static func instant(_ seconds: Double) -> Date? {
        Date.bounded(secondsSince1970: seconds)
    }

    /// RFC 7515 §2: base64url without padding.
    public static func base64URLDecode(_ text: Substring) -> Data? {
        var base64 = String(text.map { $0 == "-" ? "+" : $0 == "_" ? "/" : $0 })
        base64 += String(repeating: "=", count: (4 - base64.utf8.count % 4) % 4)
        return Data(base64Encoded: base64)
    }

    public static func base64URLEncode(_ data: Data) -> String {
        String(data.base64EncodedString().compactMap { $0 == "+" ? "-" : $0 == "/" ? "_" : $0 == "=" ? nil : $0 })
    }
}
