import Foundation
import TokendCore
import TokendProviders

/// Mints ID tokens the way the Auth emulator does: unsigned JWTs (`alg: none`, empty signature
/// segment) carrying production's claims, plus a `jti` so that every token is unique.
enum IDTokenMinter {
    struct Header: Encodable {
        var alg = "none"
        var typ = "JWT"
    }

    struct Claims: Encodable {
        struct FirebaseClaim: Encodable {
            var identities: [String: [String]]
            var sign_in_provider: String
            /// The user's Identity Platform tenant; absent for the project's own users.
            var tenant: String?
            /// `totp` or `phone` after a sign-in (or enrollment) with a second factor.
            var sign_in_second_factor: String?
            /// The enrollment id of that factor (emulator `generateJwt`).
            var second_factor_identifier: String?
        }

        var iss: String
        var aud: String
        var auth_time: Int
        var user_id: String
        var sub: String
        var iat: Int
        var exp: Int
        var email: String?
        var email_verified: Bool?
        var firebase: FirebaseClaim
        var jti: String
    }

    /// What a sign-in fixed and every refresh of it carries forward.
    struct Subject: Sendable {
        var uid: String
        var email: String?
        /// `password`, `anonymous` or `custom`: firebase.sign_in_provider.
        var provider: String
        /// Seconds since the epoch of the sign-in: `auth_time`, unchanged across refreshes.
        var authTime: Int
        /// The user's current `emailVerified`, read again at every refresh.
        var emailVerified = false
        /// Linked identities by provider (`email`, `google.com`), for `firebase.identities`.
        var identities: [String: [String]] = [:]
        /// `firebase.tenant`, carried forward by every refresh.
        var tenant: String?
        /// `firebase.sign_in_second_factor`, carried forward by every refresh.
        var secondFactor: String?
        /// `firebase.second_factor_identifier`, likewise.
        var secondFactorIdentifier: String?
    }

    /// The token and its expiry. `iat` is whole seconds (JWT NumericDate), so `exp - iat` is
    /// exactly `lifetime`.
    static func mint(for subject: Subject, issuedAt now: Date, lifetime: Int, projectID: String) -> (token: String, expiresAt: Date) {
        let iat = Int(saturating: now.timeIntervalSince1970.rounded(.down))
        let exp = iat + lifetime
        var identities = subject.identities
        if let email = subject.email, identities["email"] == nil { identities["email"] = [email] }
        let claims = Claims(
            iss: "https://securetoken.google.com/\(projectID)", aud: projectID, auth_time: subject.authTime,
            user_id: subject.uid, sub: subject.uid, iat: iat, exp: exp,
            email: subject.email, email_verified: subject.email.map { _ in subject.emailVerified },
            firebase: .init(identities: identities, sign_in_provider: subject.provider, tenant: subject.tenant, sign_in_second_factor: subject.secondFactor,
                second_factor_identifier: subject.secondFactorIdentifier),
            jti: OIDCProvider.randomToken())
        let token = segment(Header()) + "." + segment(claims) + "."
        return (token, Date(timeIntervalSince1970: Double(exp)))
    }

    private static func segment(_ value: some Encodable) -> String {
        JWTClaims.base64URLEncode(FakeJSON.encode(value))
    }
}
