/// Everything mutable about one account's session: the value of its one keyring item.
///
/// It is stored and replaced as a whole, so a refresh token and the tokens minted with it can
/// never be torn apart (docs/architecture.md, "The keyring"). Each token carries its own expiry, so a refresh answer that
/// omits one kind never makes an old token of that kind look fresh.
public struct TokenSet: Codable, Sendable, Equatable {
    public var refreshToken: String
    public var idToken: String?
    public var idTokenExpiresAt: Date?
    public var accessToken: String?
    public var accessTokenExpiresAt: Date?
    /// When the provider issued the current tokens: with the expiry it gives the lifetime that
    /// the refresh margin is a third of.
    public var issuedAt: Date?
    /// The endpoint that issued the session (see `AccountConfiguration.endpoint`); the refresh
    /// token is only ever sent back there. Nil in items written before sessions were bound.
    public var endpoint: String?
    /// The scopes the session was granted at login (OIDC), when known: kept with the session so
    /// that what it may do is visible without asking the provider.
    public var scopes: [String]?
    /// Where the tokens were issued on this boot's CLOCK_BOOTTIME, stamped as the item is written
    /// (`BootAnchor`): a restart can then tell their true age even if the wall clock was stepped
    /// back meanwhile. Nil in memory and in items written before it existed.
    public var boot: BootAnchor?

    public init(
        refreshToken: String, idToken: String? = nil, idTokenExpiresAt: Date? = nil,
        accessToken: String? = nil, accessTokenExpiresAt: Date? = nil, issuedAt: Date? = nil
    ) {
        self.refreshToken = refreshToken
        self.idToken = idToken
        self.idTokenExpiresAt = idTokenExpiresAt
        self.accessToken = accessToken
        self.accessTokenExpiresAt = accessTokenExpiresAt
        self.issuedAt = issuedAt
    }

    /// The token of a kind, with its expiry, if one is held.
    public func token(_ kind: TokenKind) -> (value: String, expiresAt: Date)? {
        switch kind {
        case .id:
            guard let idToken, let idTokenExpiresAt else { return nil }
            return (idToken, idTokenExpiresAt)
        case .access:
            guard let accessToken, let accessTokenExpiresAt else { return nil }
            return (accessToken, accessTokenExpiresAt)
        }
    }

    /// The token of a kind if it is still valid for at least `minValid` seconds at `now` (and
    /// alive at all, whatever `minValid` says): the one rule for handing a held token out.
    public func token(_ kind: TokenKind, validFor minValid: Double, at now: Date) -> (value: String, expiresAt: Date)? {
        guard let held = token(kind), held.expiresAt.timeIntervalSince(now) >= minValid, held.expiresAt > now else { return nil }
        return held
    }

    /// The expiry that drives proactive refresh: the soonest of the held tokens'.
    public var expiresAt: Date? {
        [idTokenExpiresAt, accessTokenExpiresAt].compactMap { $0 }.min()
    }

    enum CodingKeys: String, CodingKey {
        case refreshToken = "refresh_token"
        case idToken = "id_token"
        case idTokenExpiresAt = "id_token_expires_at"
        case accessToken = "access_token"
        case accessTokenExpiresAt = "expires_at"
        case issuedAt = "issued_at"
        case endpoint
        case scopes
        case boot
    }
}

extension TokenSet: CustomStringConvertible, CustomDebugStringConvertible {
    /// Never the tokens themselves: a TokenSet that slips into a log line or an interpolated
    /// error message must not leak a secret (docs/architecture.md, "Secrets").
    public var description: String {
        "TokenSet(id: \(idToken == nil ? "none" : "held"), access: \(accessToken == nil ? "none" : "held"), expires: \(expiresAt.map { "\($0.timeIntervalSince1970)" } ?? "unknown"))"
    }
    public var debugDescription: String { description }
}

extension TokenSet {
    /// The keyring item's secret value: one JSON object, dates as whole seconds since the epoch.
    /// With `account`, the item's own account name is written beside the tokens: a bulk read of
    /// every item's secret (one GetSecrets call) then knows whose each one is without asking for
    /// each item's attributes, which gnome-keyring answers in time linear in the collection's size.
    public func keyringJSON(account: String? = nil) throws -> String {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .secondsSince1970
        encoder.outputFormatting = [.sortedKeys]
        return String(decoding: try encoder.encode(KeyringSecret(tokens: self, account: account)), as: UTF8.self)
    }

    /// The account an item's secret names (`keyringJSON(account:)`); nil for a secret written
    /// without one (by hand, or by tokend before 2026-11) or one that is not JSON.
    public static func keyringAccount(in secret: String) -> String? {
        (try? JSONDecoder().decode(KeyringSecret.Name.self, from: Data(secret.utf8)))?.account
    }

    /// Dates are held to the same bounds as JWT claims (1970 to 9999): any program in the session
    /// can write the item, and an instant like 1e300 would trap wherever it is formatted or
    /// counted in seconds. Out of range is as unreadable as malformed JSON.
    public init(keyringJSON: String) throws {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            guard let date = Date.bounded(secondsSince1970: try container.decode(Double.self)) else {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "instant out of range")
            }
            return date
        }
        self = try decoder.decode(TokenSet.self, from: Data(keyringJSON.utf8))
    }
}

/// The keyring secret: the token set's keys and, beside them, the account's name.
private struct KeyringSecret: Encodable {
    let tokens: TokenSet
    let account: String?

    struct Name: Decodable {
        let account: String?
    }

    enum CodingKeys: String, CodingKey {
        case account
    }

    func encode(to encoder: any Encoder) throws {
        try tokens.encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(account, forKey: .account)
    }
}
