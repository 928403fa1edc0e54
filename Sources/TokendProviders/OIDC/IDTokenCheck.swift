import FoundationEssentials
import JWTKit
import TokendCore

/// An OpenID Connect ID token checked at sign-in (OpenID Connect Core §3.1.3.7): the signature
/// against the provider's keys, then each claim, each failure with its own words. Times allow a
/// leeway, and when the provider's `Date` header shows that this machine's clock is what is off,
/// the failure says so instead of blaming the token.
struct IDTokenCheck {
    /// Five minutes either way: what common OpenID Connect libraries allow (Microsoft's default
    /// clock skew), wide enough for a clock NTP has not yet set, narrow enough that an expired
    /// token stays expired.
    static let leeway: Double = 300

    /// The issuer as discovery named it: possibly Microsoft's `{tenantid}` template.
    var issuer: String
    var clientID: String
    var nonce: String?
    var now: Date
    /// The provider's clock, from its answer's `Date` header, when it sent one.
    var providerTime: Date?

    // MARK: Signature

    /// Verifies the signature with the JWKS key the token names (`kid`), else with each usable
    /// key of its algorithm. Keys tokend cannot use — no `kid`, an encryption key, an unknown
    /// type or algorithm, a malformed entry — are skipped: one odd key must not fail every login.
    static func verifySignature(_ token: String, jwks body: [UInt8]) async throws {
        let header = TokenHeader(token)
        let keys = usableKeys(body, algorithm: header?.alg)
        guard !keys.isEmpty else {
            throw LoginFailure(.misconfigured, code: "invalid_id_token", message: "the provider's key set (jwks_uri) holds no key tokend can check an ID token with")
        }
        let named = keys.filter { header?.kid != nil && $0.kid == header?.kid }
        for candidate in named.isEmpty ? keys : named {
            let collection = JWTKeyCollection()
            do {
                // A key without a `kid` gets one of ours: JWTKit files keys by `kid`.
                var jwk = candidate.jwk
                jwk.keyIdentifier = JWKIdentifier(string: candidate.kid ?? "tokend-unnamed")
                try await collection.add(jwk: jwk, isDefault: true)
                _ = try await collection.verify(token, as: SignatureOnly.self)
                return
            } catch {
                continue
            }
        }
        throw LoginFailure(.misconfigured, code: "invalid_id_token", message: "the provider's ID token is not signed by any of its keys (jwks_uri)")
    }

    /// The keys of a JWKS that could sign an ID token of `algorithm`.
    static func usableKeys(_ body: [UInt8], algorithm: String?) -> [(kid: String?, jwk: JWK)] {
        guard let set = try? JSONDecoder().decode(LenientKeySet.self, from: Data(body)) else { return [] }
        return set.keys.compactMap { entry in
            guard let entry, let jwk = entry.jwk, entry.use != "enc" else { return nil }
            if let algorithm, let keyAlgorithm = entry.alg, keyAlgorithm != algorithm { return nil }
            return (entry.kid, jwk)
        }
    }

    /// A JWKS whose entries are decoded one by one: a bad entry is nil, not a failed set.
    private struct LenientKeySet: Decodable {
        var keys: [LenientKey?]

        init(from decoder: any Decoder) throws {
            var container = try decoder.container(keyedBy: CodingKeys.self).nestedUnkeyedContainer(forKey: .keys)
            var keys: [LenientKey?] = []
            // A key set of more than 100 keys is not one anybody rotates through.
            while !container.isAtEnd, keys.count < 100 {
                keys.append(try? container.decode(LenientKey.self))
            }
            self.keys = keys
        }

        enum CodingKeys: String, CodingKey { case keys }
    }

    private struct LenientKey: Decodable {
        var kid: String?
        var use: String?
        var alg: String?
        var jwk: JWK?

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            kid = try? container.decode(String.self, forKey: .kid)
            use = try? container.decode(String.self, forKey: .use)
            alg = try? container.decode(String.self, forKey: .alg)
            jwk = try? JWK(from: decoder)
        }

        enum CodingKeys: String, CodingKey { case kid, use, alg }
    }

    /// Nothing but the signature: the claims are checked by `check`, with tokend's own words.
    private struct SignatureOnly: JWTPayload {
        init(from decoder: any Decoder) throws {}
        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    private struct TokenHeader: Decodable {
        var kid: String?
        var alg: String?

        init?(_ token: String) {
            guard let header = JWTClaims.decode(TokenHeader.self, from: token, part: .header) else { return nil }
            self = header
        }
    }

    // MARK: Claims

    /// The claims of a token whose signature checked out: `iss`, `aud`, `azp`, `exp`, `iat`,
    /// `nbf`, `nonce`.
    func check(_ token: String) throws(LoginFailure) {
        guard let claims = JWTClaims(token: token) else {
            throw LoginFailure(.misconfigured, code: "invalid_id_token", message: "the provider's ID token has no readable claims")
        }
        guard IssuerTemplate.matches(issuer, issuer: claims.issuer, tenant: claims.tenantID) else {
            throw LoginFailure(.misconfigured, code: "invalid_id_token", message: "the ID token's issuer is \"\(claims.issuer ?? "none")\", not \"\(issuer)\"")
        }
        guard claims.audience.contains(clientID) else {
            throw LoginFailure(.misconfigured, code: "invalid_id_token", message: "the ID token was not issued to client \"\(clientID)\"")
        }
        // §3.1.3.7 (4, 5): with several audiences the authorized party must be named, and it
        // must be us whenever it is named.
        if claims.audience.count > 1 || claims.authorizedParty != nil, claims.authorizedParty != clientID {
            throw LoginFailure(
                .misconfigured, code: "invalid_id_token",
                message: "the ID token's authorized party (azp) is \"\(claims.authorizedParty ?? "missing")\", not client \"\(clientID)\"")
        }
        guard let expiry = claims.expiresAt else {
            throw LoginFailure(.misconfigured, code: "invalid_id_token", message: "the ID token has no valid expiry (exp)")
        }
        if expiry.timeIntervalSince(now) < -Self.leeway {
            throw timeFailure("the ID token expired \(Self.minutes(now.timeIntervalSince(expiry))) minutes ago by this machine's clock")
        }
        if let issued = claims.issuedAt, issued.timeIntervalSince(now) > Self.leeway {
            throw timeFailure("the ID token says it was issued \(Self.minutes(issued.timeIntervalSince(now))) minutes in the future by this machine's clock")
        }
        if let notBefore = claims.notBefore, notBefore.timeIntervalSince(now) > Self.leeway {
            throw timeFailure("the ID token is not valid for another \(Self.minutes(notBefore.timeIntervalSince(now))) minutes by this machine's clock")
        }
        if let nonce, claims.nonce != nonce {
            throw LoginFailure(.denied, code: "nonce_mismatch", message: "the ID token does not answer this sign-in (nonce mismatch); sign in again")
        }
    }

    /// A time check failed: this machine's clock is to blame when the provider's own clock
    /// differs from it by more than the leeway; else the token is (exit 78).
    func timeFailure(_ what: String) -> LoginFailure {
        if let providerTime {
            let skew = now.timeIntervalSince(providerTime)
            if abs(skew) > Self.leeway {
                let minutes = Self.minutes(abs(skew))
                return LoginFailure(
                    .transient, code: "clock_skew",
                    message: "this machine's clock is \(minutes) minutes \(skew > 0 ? "ahead of" : "behind") the provider's (\(what)); "
                        + "set the clock right (timedatectl set-ntp true) and sign in again")
            }
        }
        return LoginFailure(.misconfigured, code: "invalid_id_token", message: "\(what), \(Int(saturating: Self.leeway / 60)) minutes of leeway allowed; sign in again")
    }

    /// Whole minutes, for messages.
    static func minutes(_ seconds: Double) -> Int { Int(saturating: (seconds / 60).rounded()) }
}
