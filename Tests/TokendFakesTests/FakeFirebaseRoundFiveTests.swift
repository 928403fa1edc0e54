import Foundation
import Testing
import TokendCore
import TokendFakes

/// Issue 44, item 9: the fake's rows that a fidelity review found apart from the emulator or
/// production (tenants, restricted keys, takeovers, Google's texts), each as its source in the
/// fake's reference table (FakeFirebase+IdentityToolkit.swift) says.
@Suite("FakeFirebase, fidelity round 5")
struct FakeFirebaseRoundFiveTests {
    static let key = "AIza-round-five"

    func start(_ configure: (inout FakeFirebase.Options) -> Void = { _ in }) async throws -> FakeFirebase {
        var options = FakeFirebase.Options()
        configure(&options)
        return try await FakeFirebase.start(options: options)
    }

    /// POSTs JSON to `accounts:METHOD`; the status and the decoded object.
    func call(_ fake: FakeFirebase, _ method: String, _ body: [String: Any]) async throws -> (Int, [String: Any]) {
        let data = try JSONSerialization.data(withJSONObject: body)
        let answer = try await RawHTTP.exchange(
            port: fake.port, method: "POST", target: "/identitytoolkit.googleapis.com/v1/accounts:\(method)?key=\(Self.key)",
            body: String(decoding: data, as: UTF8.self), contentType: "application/json", timeout: 10
        ).answer()
        return (answer.status, try answer.object())
    }

    static func message(_ object: [String: Any]) -> String? { (object["error"] as? [String: Any])?["message"] as? String }

    /// Rows 40/65: emulator server.ts takes the tenant from the ID token when the body names
    /// none; only a different body tenant is `TENANT_ID_MISMATCH`.
    @Test func aTenantsTokenWithoutTenantIdTakesTheTenantFromTheToken() async throws {
        let fake = try await start()
        defer { Task { try? await fake.shutdown() } }
        let (status, signedUp) = try await call(fake, "signUp", ["email": "t@example.com", "password": "secret-1", "returnSecureToken": true, "tenantId": "acme-1"])
        #expect(status == 200)
        let idToken = try #require(signedUp["idToken"] as? String)
        let (bare, looked) = try await call(fake, "lookup", ["idToken": idToken])
        #expect(bare == 200, "\(looked)")
        let (other, refused) = try await call(fake, "lookup", ["idToken": idToken, "tenantId": "acme-2"])
        #expect(other == 400 && Self.message(refused) == "TENANT_ID_MISMATCH")
    }

    /// Row 43: `signInWithIdp`'s answer echoes the request's `tenantId` (schema
    /// `SignInWithIdpResponse.tenantId`).
    @Test func signInWithIdpEchoesTheTenant() async throws {
        let fake = try await start { $0.identityProviders["github.com"] = FakeFirebase.IdentityProvider() }
        defer { Task { try? await fake.shutdown() } }
        let token = #"{"sub":"gh-1","email":"g@example.com","email_verified":true}"#
        let body = "access_token=" + (token.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "") + "&providerId=github.com"
        let (status, answer) = try await call(fake, "signInWithIdp", [
            "requestUri": "http://localhost", "postBody": body, "returnSecureToken": true, "tenantId": "acme-1",
        ])
        #expect(status == 200, "\(answer)")
        #expect(answer["tenantId"] as? String == "acme-1")
    }

    /// Row 61: a verified takeover of an unverified owner removes every provider of the owner
    /// (emulator `handleIdpSigninEmailRequired`, `deleteProviders`), not only its password.
    @Test func aVerifiedTakeoverRemovesEveryProviderOfTheOldOwner() async throws {
        let fake = try await start {
            $0.identityProviders["github.com"] = FakeFirebase.IdentityProvider()
            $0.identityProviders["google.com"] = FakeFirebase.IdentityProvider()
        }
        defer { Task { try? await fake.shutdown() } }
        let owner = fake.createFederatedUser(email: "own@example.com", provider: "github.com", rawID: "gh-own")
        let token = #"{"sub":"goo-1","email":"own@example.com","email_verified":true}"#
        let body = "access_token=" + (token.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "") + "&providerId=google.com"
        let (status, answer) = try await call(fake, "signInWithIdp", ["requestUri": "http://localhost", "postBody": body, "returnSecureToken": true])
        #expect(status == 200 && answer["localId"] as? String == owner, "\(answer)")
        #expect(fake.user(owner)?.providers == ["google.com"])
    }

    /// Rows 50, 51 (and 45, 48): each key refusal in production's envelope and words, with
    /// the reason and the key's project as `consumer`.
    @Test(arguments: FakeFirebase.APIKeyRestriction.allCases)
    func aRefusedKeyIsAnsweredInProductionsEnvelope(restriction: FakeFirebase.APIKeyRestriction) async throws {
        let fake = try await start { $0.restrictedAPIKeys[Self.key] = restriction }
        defer { Task { try? await fake.shutdown() } }
        let (status, answer) = try await call(fake, "signInWithIdp", ["requestUri": "http://localhost", "postBody": "id_token=x&providerId=google.com"])
        let error = try #require(answer["error"] as? [String: Any])
        #expect(status == 403 && error["status"] as? String == "PERMISSION_DENIED")
        let info = try #require((error["details"] as? [[String: Any]])?.first)
        #expect(info["reason"] as? String == restriction.rawValue)
        #expect((info["metadata"] as? [String: String]) == ["service": "identitytoolkit.googleapis.com", "consumer": "projects/123456789012"])
        let expected: String
        switch restriction {
        case .httpReferrer: expected = "Requests from referer <empty> are blocked."
        case .ipAddress: expected = "The provided API key has an IP address restriction. The originating IP address of the call (127.0.0.1) violates this restriction."
        case .service: expected = "Requests to this API identitytoolkit method google.firebase.auth.v1.IdentityIdaasAuthenticationService.SignInWithIdp are blocked."
        case .androidApp: expected = "Requests from this Android client application <empty> are blocked."
        case .iosApp: expected = "Requests from this ios client application <empty> are blocked."
        case .serviceDisabled: expected = "Identity Toolkit API has not been used in project 123456789012 before or it is disabled. Enable it by visiting https://console.developers.google.com/apis/api/identitytoolkit.googleapis.com/overview?project=123456789012 then retry. If you enabled this API recently, wait a few minutes for the action to propagate to our systems and retry."
        }
        #expect(error["message"] as? String == expected)
    }

    /// Rows 83, 84: production's words for a Google ID token of another client, and for a
    /// missing or wrong nonce (the replay text is not theirs).
    @Test func audienceAndNonceRefusalsUseProductionsWords() async throws {
        let fake = try await start { $0.identityProviders["google.com"] = FakeFirebase.IdentityProvider(clientIDs: ["the-projects-client"]) }
        defer { Task { try? await fake.shutdown() } }
        func idp(_ claims: String, nonce: String?) async throws -> String? {
            let token = claims.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
            let body = "id_token=\(token)&providerId=google.com" + (nonce.map { "&nonce=\($0)" } ?? "")
            return Self.message(try await call(fake, "signInWithIdp", ["requestUri": "http://localhost", "postBody": body]).1)
        }
        let audience = try await idp(#"{"sub":"g-1","aud":"someone-else","exp":4102444800}"#, nonce: nil)
        #expect(audience == "INVALID_IDP_RESPONSE : Invalid Idp Response: the Google id_token is not allowed to be used with this application. Its audience (OAuth 2.0 client ID) is someone-else, which is not authorized to be used in the project with project_number: 123456789012.")
        let missing = try await idp(#"{"sub":"g-1","aud":"the-projects-client","exp":4102444800,"nonce":"abc"}"#, nonce: nil)
        #expect(missing == "MISSING_OR_INVALID_NONCE : Nonce is missing in the request.")
        let wrong = try await idp(#"{"sub":"g-1","aud":"the-projects-client","exp":4102444800,"nonce":"abc"}"#, nonce: "raw")
        #expect(wrong?.hasPrefix("MISSING_OR_INVALID_NONCE : The nonce in ID Token \"abc\" does not match the SHA256 hash of the raw nonce \"raw\"") == true)
    }
}
