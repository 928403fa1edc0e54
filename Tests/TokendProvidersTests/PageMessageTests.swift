import Testing
@testable import TokendProviders

/// Issue 44, item 4: what the hosted page says comes to tokenctl bounded and cleaned.
@Suite struct PageMessageTests {
    @Test func credentialsControlCharactersAndLengthAreTakenOut() throws {
        let jwt = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzZWNyZXQtc3ViamVjdC1vZi10aGUtdG9rZW4ifQ.c2lnbmF0dXJl"
        let said = try #require(PageMessage.clean(
            "Firebase: INVALID_CREDENTIAL_OR_PROVIDER_ID : Invalid IdP response/credential: http://localhost?id_token=\(jwt)&providerId=microsoft.com\u{1b}[31m\nsecond line (auth/invalid-credential)."))
        #expect(!said.contains("eyJ") && said.contains("id_token=[redacted]&providerId=microsoft.com"), "\(said)")
        #expect(!said.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7f }, "\(said)")
        // A bare token anywhere, whatever its field; a GUID stays readable.
        let bare = try #require(PageMessage.clean("refresh AMf-vBxyz0123456789abcdefghijklmnopqrstuvwxyzABCDEFG for app '3f1d1ad2-6c59-4d5e-9a0c-2b6a8a8e7f11'"))
        #expect(bare == "refresh [redacted] for app '3f1d1ad2-6c59-4d5e-9a0c-2b6a8a8e7f11'", "\(bare)")
        let long = try #require(PageMessage.clean(String(repeating: "word ", count: 1000)))
        #expect(long.count <= PageMessage.maximumLength + 1)
        #expect(PageMessage.clean("\u{7}\u{1b}") == nil)
    }

    @Test func theSDKsFrameIsTakenOffAndABareErrorSaysNothing() {
        #expect(HostedSignIn.detail("Firebase: Error (auth/popup-closed-by-user).", code: "auth/popup-closed-by-user") == nil)
        #expect(HostedSignIn.detail("Firebase: Too many attempts. (auth/too-many-requests).", code: "auth/too-many-requests") == "Too many attempts.")
    }

    @Test func aReferrerCodeGetsThroughTheListenerAndItsAdvice() throws {
        let code = "auth/requests-from-referer-http://localhost:8123/-are-blocked."
        #expect(PageMessage.code(code) == code)
        #expect(PageMessage.code("auth/x\"<script>") == "failed")
        let failure = try #require(HostedSignIn.failure(code: code, name: "Apple", authDomain: "p.firebaseapp.com"))
        #expect(failure.kind == .misconfigured)
    }
}
