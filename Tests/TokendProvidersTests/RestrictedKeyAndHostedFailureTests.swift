import Foundation
import Testing
import TokendCore
@testable import TokendProviders

/// Issue 33's mappings, one by one: a restricted key's refusal (item 7), the hosted page's
/// failures (item 3) and `needConfirmation`'s next sign-in (item 4).
@Suite struct RestrictedKeyAndHostedFailureTests {
    @Test(arguments: RefreshFailure.apiKeyRestrictions.keys.sorted())
    func aRestrictedKeyIsAConfigurationErrorNamingTheRestrictionAndTheFix(reason: String) {
        let body = #"{"error":{"code":403,"message":"Requests from referer <empty> are blocked.","status":"PERMISSION_DENIED","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"\#(reason)","domain":"googleapis.com"}]}}"#
        guard case .misconfigured(let failure) = RefreshClassifier.firebase(status: 403, body: Array(body.utf8), retryAfter: nil) else {
            Issue.record("expected misconfigured"); return
        }
        #expect(failure.code == reason)
        #expect(failure.message.contains("Identity Toolkit API and the Token Service API") && failure.message.contains("Requests from referer"))
        let login = FirebaseProvider.signInFailure(status: 403, body: Array(body.utf8), secrets: [], call: .passwordSignIn)
        #expect(login.kind == .misconfigured && login.code == reason && login.message == failure.message)
    }

    @Test(arguments: HostedSignIn.adviceCodes)
    func everyHostedFailureHasAdviceAndThePageCarriesIt(code: String) throws {
        let failure = try #require(HostedSignIn.failure(code: code, name: "Apple", authDomain: "p.firebaseapp.com"))
        #expect(!failure.advice.isEmpty)
        let page = HostedSignIn(authDomain: "p.firebaseapp.com", scopes: []).page(apiKey: "k", providerID: "apple.com", emulatorHost: nil, state: "s")
        #expect(page.contains(HostedSignIn.json(code) + ": " + HostedSignIn.json(failure.advice)))
    }

    @Test func hostedFailuresThatNeedASettingAre78AndTheOthers77() {
        func kind(_ code: String) -> LoginFailure.Kind? { HostedSignIn.failure(code: code, name: "Apple", authDomain: "d")?.kind }
        for code in ["auth/unauthorized-domain", "auth/operation-not-allowed", "auth/web-storage-unsupported", "auth/multi-factor-auth-required"] {
            #expect(kind(code) == .misconfigured, "\(code)")
        }
        for code in ["auth/popup-blocked", "auth/popup-closed-by-user", "auth/account-exists-with-different-credential"] {
            #expect(kind(code) == .denied, "\(code)")
        }
        #expect(kind("auth/internal-error") == nil)
    }

    @Test func needConfirmationNamesTheOwnersSignIn() {
        let github = FirebaseProvider.needConfirmation(email: "a@example.com", verifiedProviders: ["github.com"], call: .idpSignIn("google.com"))
        #expect(github.message.contains("(tokenctl login ACCOUNT --idp github.com)") && !github.message.contains("--email"))
        let both = FirebaseProvider.needConfirmation(email: "a@example.com", verifiedProviders: ["google.com", "apple.com"], call: .idpSignIn("github.com"))
        #expect(both.message.contains("(tokenctl login ACCOUNT --google or --idp apple.com)"))
        let password = FirebaseProvider.needConfirmation(email: "a@example.com", verifiedProviders: [], call: .idpSignIn("google.com"))
        #expect(password.message.contains("--email a@example.com"))
    }
}
