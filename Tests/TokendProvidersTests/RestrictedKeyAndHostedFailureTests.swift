import Foundation
import Testing
import TokendCore
@testable import TokendProviders

/// Issue 33's mappings, one by one: a restricted key's refusal (item 7), the hosted page's
/// failures (item 3) and `needConfirmation`'s next sign-in (item 4).
@Suite struct RestrictedKeyAndHostedFailureTests {
    @Test(arguments: RefreshFailure.apiKeyRefusals.keys.sorted())
    func aRestrictedKeyIsAConfigurationErrorNamingTheRestrictionAndTheFix(reason: String) throws {
        let body = #"{"error":{"code":403,"message":"Requests from referer <empty> are blocked.","status":"PERMISSION_DENIED","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"\#(reason)","domain":"googleapis.com"}]}}"#
        guard case .misconfigured(let failure) = RefreshClassifier.firebase(status: 403, body: Array(body.utf8), retryAfter: nil) else {
            Issue.record("expected misconfigured"); return
        }
        let refusal = try #require(RefreshFailure.apiKeyRefusals[reason])
        #expect(failure.code == reason)
        #expect(failure.message == "\(refusal.what) (Requests from referer <empty> are blocked.); \(refusal.fix)")
        let login = FirebaseProvider.signInFailure(status: 403, body: Array(body.utf8), secrets: [], call: .passwordSignIn)
        #expect(login.kind == .misconfigured && login.code == reason && login.message == failure.message)
    }

    /// Issue 44, item 3: a sentence that is no Firebase code never becomes the code; the
    /// `ErrorInfo.reason` (or the status) stands in, and a quota reason is transient.
    @Test func anEnglishSentenceNeverBecomesTheCode() {
        let unknown = #"{"error":{"code":403,"message":"Something new: with a colon.","status":"PERMISSION_DENIED","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"SECURITY_POLICY_VIOLATED","domain":"googleapis.com"}]}}"#
        guard case .misconfigured(let failure) = RefreshClassifier.firebase(status: 403, body: Array(unknown.utf8), retryAfter: nil) else {
            Issue.record("expected misconfigured"); return
        }
        #expect(failure.code == "SECURITY_POLICY_VIOLATED")
        let bare = #"{"error":{"code":403,"message":"Requests from this Android client application <empty> are blocked.","status":"PERMISSION_DENIED"}}"#
        guard case .misconfigured(let plain) = RefreshClassifier.firebase(status: 403, body: Array(bare.utf8), retryAfter: nil) else {
            Issue.record("expected misconfigured"); return
        }
        #expect(plain.code == "http_403")
        // An older answer with only the legacy reason (firebase-ios-sdk still reads these).
        let legacy = #"{"error":{"code":403,"message":"Requests from referer <empty> are blocked.","errors":[{"domain":"global","reason":"ipRefererBlocked","message":"x"}]}}"#
        guard case .misconfigured(let old) = RefreshClassifier.firebase(status: 403, body: Array(legacy.utf8), retryAfter: nil) else {
            Issue.record("expected misconfigured"); return
        }
        #expect(old.code == "API_KEY_HTTP_REFERRER_BLOCKED")
        let quota = #"{"error":{"code":403,"message":"Quota exceeded.","status":"PERMISSION_DENIED","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"RATE_LIMIT_EXCEEDED","domain":"googleapis.com"}]}}"#
        guard case .transient = RefreshClassifier.firebase(status: 403, body: Array(quota.utf8), retryAfter: nil) else {
            Issue.record("expected transient"); return
        }
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
