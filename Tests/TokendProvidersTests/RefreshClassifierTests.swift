import Testing
import TokendCore
@testable import TokendProviders

@Suite struct RefreshClassifierTests {
    func firebaseError(_ message: String, status: Int = 400, reason: String? = nil) -> RefreshOutcome {
        let details = reason.map { #","details":[{"reason":"\#($0)"}]"# } ?? ""
        let body = #"{"error":{"code":\#(status),"message":"\#(message)","status":"INVALID_ARGUMENT"\#(details)}}"#
        return RefreshClassifier.firebase(status: status, body: Array(body.utf8), retryAfter: nil)
    }

    @Test func firebaseSuccessWithStringLifetime() {
        let body = #"{"id_token":"a.b.c","access_token":"a.b.c","refresh_token":"r2","expires_in":"3600","token_type":"Bearer","user_id":"u","project_id":"1"}"#
        #expect(RefreshClassifier.firebase(status: 200, body: Array(body.utf8), retryAfter: nil)
            == .refreshed(IssuedTokens(refreshToken: "r2", idToken: "a.b.c", accessToken: "a.b.c", expiresIn: 3600)))
    }

    /// GitHub refuses a code with HTTP 200 and `error`: the refusal, not a broken success.
    @Test func anErrorAnsweredWithStatus200IsARefusal() {
        let refused = #"{"error":"bad_verification_code","error_description":"The code passed is incorrect or expired.","error_uri":"https://docs.github.com/"}"#
        #expect(RefreshClassifier.oauth(status: 200, body: Array(refused.utf8), retryAfter: nil)
            == .misconfigured(RefreshFailure(code: "bad_verification_code", message: "The code passed is incorrect or expired.")))
        let granted = #"{"access_token":"gho_x","token_type":"bearer","scope":"read:user,user:email"}"#
        #expect(RefreshClassifier.oauth(status: 200, body: Array(granted.utf8), retryAfter: nil, defaultLifetime: 300)
            == .refreshed(IssuedTokens(accessToken: "gho_x", expiresIn: 300, scopes: ["read:user,user:email"])))
    }

    @Test func firebaseAccessTokenAloneStandsForTheIDToken() {
        let body = #"{"access_token":"t","expires_in":"60"}"#
        #expect(RefreshClassifier.firebase(status: 200, body: Array(body.utf8), retryAfter: nil)
            == .refreshed(IssuedTokens(idToken: "t", accessToken: "t", expiresIn: 60)))
    }

    @Test(arguments: ["TOKEN_EXPIRED", "USER_DISABLED", "USER_NOT_FOUND", "INVALID_REFRESH_TOKEN", "TOKEN_EXPIRED : the user's credential is no longer valid"])
    func firebasePermanentCodesNeedLogin(message: String) {
        guard case .needsLogin(let failure) = firebaseError(message) else { Issue.record("expected needsLogin"); return }
        #expect(!failure.code.contains(" "))
    }

    @Test(arguments: ["PROJECT_NUMBER_MISMATCH", "INVALID_GRANT_TYPE", "MISSING_REFRESH_TOKEN"])
    func firebaseConfigurationCodes(message: String) {
        guard case .misconfigured = firebaseError(message) else { Issue.record("expected misconfigured"); return }
    }

    @Test func badAPIKeyIsAConfigurationError() {
        guard case .misconfigured(let failure) = firebaseError("API key not valid. Please pass a valid API key.", reason: "API_KEY_INVALID") else {
            Issue.record("expected misconfigured"); return
        }
        #expect(failure.code == "API_KEY_INVALID")
        #expect(failure.message.contains("API key not valid"))
    }

    @Test func missingKeyIsAConfigurationError() {
        guard case .misconfigured = firebaseError("Method doesn't allow unregistered callers", status: 403) else { Issue.record("expected misconfigured"); return }
    }

    @Test(arguments: [408, 429, 500, 502, 503, 504])
    func transientStatuses(status: Int) {
        guard case .transient(_, let retryAfter) = RefreshClassifier.firebase(status: status, body: [], retryAfter: 7) else { Issue.record("expected transient"); return }
        #expect(retryAfter == 7)
    }

    @Test func tooManyAttemptsIsTransient() {
        guard case .transient = firebaseError("TOO_MANY_ATTEMPTS_TRY_LATER") else { Issue.record("expected transient"); return }
    }

    @Test(arguments: ["not json", #"{"token_type":"Bearer"}"#, #"{"id_token":"x"}"#, "", #"{"id_token":"x","expires_in":"1e300"}"#,
                      #"{"id_token":"x","expires_in":"-5"}"#, #"{"id_token":"x","expires_in":"nan"}"#,
                      #"{"id_token":"x","expires_in":"60","refresh_token":""}"#])
    func brokenSuccessIsTransient(body: String) {
        guard case .transient(let failure, _) = RefreshClassifier.firebase(status: 200, body: Array(body.utf8), retryAfter: nil) else {
            Issue.record("expected transient"); return
        }
        #expect(failure.code == "malformed_response")
    }

    @Test func oauthCodes() {
        func outcome(_ code: String, _ status: Int = 400) -> RefreshOutcome {
            RefreshClassifier.oauth(status: status, body: Array(#"{"error":"\#(code)","error_description":"d"}"#.utf8), retryAfter: nil)
        }
        guard case .needsLogin = outcome("invalid_grant") else { Issue.record("invalid_grant"); return }
        guard case .misconfigured = outcome("invalid_client", 401) else { Issue.record("invalid_client"); return }
        guard case .transient = outcome("temporarily_unavailable") else { Issue.record("temporarily_unavailable"); return }
        let success = RefreshClassifier.oauth(status: 200, body: Array(#"{"access_token":"a","expires_in":300}"#.utf8), retryAfter: nil)
        #expect(success == .refreshed(IssuedTokens(accessToken: "a", expiresIn: 300)))
    }

    /// An empty refresh token in a 200 is malformed, never a rotation to persist.
    @Test func emptyRefreshTokenIsMalformed() {
        let outcome = RefreshClassifier.oauth(status: 200, body: Array(#"{"access_token":"a","expires_in":300,"refresh_token":""}"#.utf8), retryAfter: nil)
        guard case .transient(let failure, _) = outcome else { Issue.record("expected transient, got \(outcome)"); return }
        #expect(failure.code == "malformed_response")
    }

    @Test func oauthShapedAnswersFromFirebaseFollowOAuthRules() {
        let revoked = RefreshClassifier.firebase(status: 400, body: Array(#"{"error":"invalid_grant","error_description":"revoked"}"#.utf8), retryAfter: nil)
        #expect(revoked == .needsLogin(RefreshFailure(code: "invalid_grant", message: "revoked")))
        guard case .misconfigured = RefreshClassifier.firebase(status: 401, body: Array(#"{"error":"invalid_client"}"#.utf8), retryAfter: nil) else {
            Issue.record("expected misconfigured"); return
        }
    }

    @Test func retryAfterSeconds() {
        #expect(RefreshClassifier.retryAfter(" 30 ") == 30)
        #expect(RefreshClassifier.retryAfter("Wed, 21 Oct 2015 07:28:00 GMT") == nil)
        #expect(RefreshClassifier.retryAfter(nil) == nil)
    }
}
