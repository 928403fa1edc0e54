import Crypto
import Foundation
import Testing
import TokendCore
import TokendFakes
@testable import TokendProviders

/// The ID token a sign-in ends with, checked (OpenID Connect Core §3.1.3.7) through the real
/// device flow against the fake provider, with tokens signed by a key of the test's own.
@Suite("ID token checks", .timeLimit(.minutes(1)))
struct IDTokenCheckTests {
    /// Before: one key without `kid` (or an encryption key, or a malformed entry) made JWTKit
    /// refuse the whole set, and every login failed.
    @Test func unusableKeysInTheSetAreSkipped() async throws {
        let key = SigningKey()
        let jwks = "{\"keys\":[\(key.jwk(kid: nil)), {\"kty\":\"RSA\",\"use\":\"enc\",\"kid\":\"e\",\"n\":\"AQAB\",\"e\":\"AQAB\"}, \"garbage\", {\"kty\":\"OKP\",\"crv\":\"X448\",\"kid\":\"o\",\"x\":\"AA\"}, \(key.jwk(kid: "k1"))]}"
        let outcome = try await deviceLogin(idToken: { key.sign(issuer: $0, claims(), kid: "k1") }, jwks: jwks)
        #expect(outcome.failure == nil, "\(outcome)")
        // A token naming no kid is tried against each usable key.
        let unnamed = try await deviceLogin(idToken: { key.sign(issuer: $0, claims(), kid: nil) }, jwks: "{\"keys\":[\(key.jwk(kid: nil))]}")
        #expect(unnamed.failure == nil, "\(unnamed)")
    }

    @Test func aTokenSignedByNoKeyOfTheSetIsRefused() async throws {
        let outcome = try await deviceLogin(idToken: { SigningKey().sign(issuer: $0, claims(), kid: "k1") }, jwks: "{\"keys\":[\(SigningKey().jwk(kid: "k1"))]}")
        #expect(outcome.failure?.code == "invalid_id_token")
        #expect(outcome.failure?.message.contains("not signed by any of its keys") == true, "\(outcome)")
    }

    /// Before: any clock difference failed the login with "failed verification against its keys".
    @Test func aFewMinutesOfClockDifferenceAreAllowed() async throws {
        let now = Date().timeIntervalSince1970
        let outcome = try await deviceLogin(idToken: { SigningKey.shared.sign(issuer: $0, claims(iat: now - 3720, exp: now - 120)) })
        #expect(outcome.failure == nil, "\(outcome)")
        let early = try await deviceLogin(idToken: { SigningKey.shared.sign(issuer: $0, claims(iat: now + 120, exp: now + 3720)) })
        #expect(early.failure == nil, "\(early)")
    }

    /// This machine's clock two hours fast: the provider's Date header says so, and so does the
    /// failure (exit 75), instead of blaming the provider's keys.
    @Test func aWrongLocalClockIsNamedAsTheCause() async throws {
        let providerNow = Date().addingTimeInterval(-7200)
        let token = { SigningKey.shared.sign(issuer: $0, claims(iat: providerNow.timeIntervalSince1970, exp: providerNow.timeIntervalSince1970 + 3600)) }
        let outcome = try await deviceLogin(idToken: token, date: providerNow)
        #expect(outcome.failure?.code == "clock_skew", "\(outcome)")
        #expect(outcome.failure?.kind == .transient)
        // Two hours when the test began; a minute more on a machine slow enough to take one.
        let skew = outcome.failure?.message ?? ""
        #expect(skew.contains("120 minutes ahead of the provider's") || skew.contains("121 minutes ahead of the provider's"), "\(outcome)")
        // The same token with the provider agreeing on the time: the token is what is wrong.
        let stale = try await deviceLogin(idToken: token, date: Date())
        #expect(stale.failure?.code == "invalid_id_token")
        // An hour ago when the test began; a minute more on a machine slow enough to take one.
        let said = stale.failure?.message ?? ""
        #expect(said.contains("expired 60 minutes ago") || said.contains("expired 61 minutes ago"), "\(stale)")
    }

    @Test func notBeforeIsRespected() async throws {
        let now = Date().timeIntervalSince1970
        var payload = claims()
        payload["nbf"] = now + 3600
        let outcome = try await deviceLogin(idToken: { SigningKey.shared.sign(issuer: $0, payload) })
        // An hour when the token was made; a minute less on a machine slow enough to take one.
        let said = outcome.failure?.message ?? ""
        #expect(said.contains("not valid for another 60 minutes") || said.contains("not valid for another 59 minutes"), "\(outcome)")
    }

    /// §3.1.3.7: with several audiences `azp` must name us; when present it must be us.
    @Test(arguments: [
        (aud: ["cli", "other"] as [String], azp: String?.none, accepted: false),
        (aud: ["cli", "other"], azp: "cli", accepted: true),
        (aud: ["cli"], azp: "other", accepted: false),
        (aud: ["cli"], azp: "cli", accepted: true),
    ])
    func theAuthorizedPartyIsChecked(_ example: (aud: [String], azp: String?, accepted: Bool)) async throws {
        var payload = claims()
        payload["aud"] = example.aud
        payload["azp"] = example.azp
        let outcome = try await deviceLogin(idToken: { SigningKey.shared.sign(issuer: $0, payload) })
        #expect((outcome.failure == nil) == example.accepted, "\(example): \(outcome)")
        if !example.accepted { #expect(outcome.failure?.message.contains("azp") == true) }
    }

    /// A session refused for its ID token is revoked at the provider, not left live.
    @Test func aRefusedIDTokensRefreshTokenIsRevoked() async throws {
        var payload = claims()
        payload["iss"] = "https://someone-else.example"
        let outcome = try await deviceLogin(idToken: { SigningKey.shared.sign(issuer: $0, payload) })
        #expect(outcome.failure?.code == "invalid_id_token")
        #expect(outcome.revoked == ["issued-refresh"], "\(outcome)")
    }

    // MARK: The world

    struct Outcome: CustomStringConvertible {
        var failure: LoginFailure?
        var revoked: [String]
        var description: String { "failure: \(failure.map { "\($0.code): \($0.message)" } ?? "none"), revoked: \(revoked)" }
    }

    /// A device login whose token answer carries `idToken`, with the fake's JWKS `jwks` and its
    /// token answer dated `date`.
    func deviceLogin(idToken: (String) -> String, jwks: String? = nil, date: Date? = nil) async throws -> Outcome {
        let fake = try await FakeOIDC.start()
        let transport = HTTPTransport(environment: [:])
        fake.script([.init(status: 200, body: jwks ?? "{\"keys\":[\(SigningKey.shared.jwk(kid: "k1"))]}")], for: "/jwks")
        var headers: [String: String] = [:]
        if let date { headers["Date"] = Self.httpDate(date) }
        let body = try JSONSerialization.data(withJSONObject: [
            "access_token": "a", "refresh_token": "issued-refresh", "expires_in": 600, "id_token": idToken(fake.issuer),
        ])
        fake.script([.init(status: 200, body: String(decoding: body, as: UTF8.self), headers: headers)])
        let provider = OIDCProvider(settings: .init(issuer: fake.issuer, clientID: "cli", clientSecret: nil), transport: transport)
        var failure: LoginFailure?
        do {
            for try await _ in provider.login(LoginRequest(method: .device, timeout: 30)) {}
        } catch {
            failure = error as? LoginFailure ?? LoginFailure(.transient, code: "other", message: "\(error)")
        }
        let revoked = fake.requests.filter { $0.path == "/revoke" }.compactMap { $0.form["token"] }
        await transport.shutdown()
        await fake.shutdown()
        return Outcome(failure: failure, revoked: revoked)
    }

    static func httpDate(_ date: Date) -> String {
        var time = time_t(date.timeIntervalSince1970)
        var parts = tm()
        gmtime_r(&time, &parts)
        var buffer = [UInt8](repeating: 0, count: 64)
        let count = buffer.withUnsafeMutableBufferPointer { bytes in
            bytes.withMemoryRebound(to: CChar.self) { strftime($0.baseAddress, $0.count, "%a, %d %b %Y %H:%M:%S GMT", &parts) }
        }
        return String(decoding: buffer.prefix(count), as: UTF8.self)
    }

    /// Claims for the fake's issuer (`ISSUER`, replaced once its port is known) and client `cli`.
    func claims(iat: Double = Date().timeIntervalSince1970, exp: Double = Date().timeIntervalSince1970 + 3600) -> [String: Any] {
        ["iss": "ISSUER", "aud": "cli", "sub": "someone", "iat": iat, "exp": exp]
    }
}

/// An ES256 key of the test's own, publishing itself as a JWK and signing JWTs.
struct SigningKey: Sendable {
    static let shared = SigningKey()
    let key = P256.Signing.PrivateKey()

    func jwk(kid: String?) -> String {
        let raw = key.publicKey.rawRepresentation
        let x = Self.base64URL(raw.prefix(32)), y = Self.base64URL(raw.suffix(32))
        return "{\"kty\":\"EC\",\"crv\":\"P-256\",\"alg\":\"ES256\",\"use\":\"sig\",\(kid.map { "\"kid\":\"\($0)\"," } ?? "")\"x\":\"\(x)\",\"y\":\"\(y)\"}"
    }

    /// `claims` with an `iss` of "ISSUER" get `issuer` instead (the fake's port is known late).
    func sign(issuer: String, _ claims: [String: Any], kid: String? = "k1") -> String {
        var claims = claims
        if claims["iss"] as? String == "ISSUER" { claims["iss"] = issuer }
        var header: [String: Any] = ["alg": "ES256", "typ": "JWT"]
        header["kid"] = kid
        let encode = { (object: [String: Any]) in Self.base64URL((try? JSONSerialization.data(withJSONObject: object)) ?? Data()) }
        let input = encode(header) + "." + encode(claims)
        let signature = (try? key.signature(for: Data(input.utf8)).rawRepresentation) ?? Data()
        return input + "." + Self.base64URL(signature)
    }

    static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }
}
