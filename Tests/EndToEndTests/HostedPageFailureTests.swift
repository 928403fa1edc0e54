import Foundation
import Testing
import TokendFakes
import TokendTestSupport

/// Issue 33, item 3: each failure of the hosted sign-in page gets its own exit status and next
/// step, and the page shows the same words: a closed popup (77) and a provider the project has
/// switched off (78), through tokend's page in a real headless Chromium and the stand-in handler.
@Suite(.serialized) struct HostedPageFailureTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var code: String
        var exit: Int32
        var advice: String
        var approve: Bool
        var disable: Bool
        var testDescription: String { code }
    }

    static let cases = [
        Case(code: "auth/popup-closed-by-user", exit: 77, advice: "the sign-in popup was closed before the sign-in finished; sign in again and finish it", approve: false, disable: false),
        Case(code: "auth/operation-not-allowed", exit: 78, advice: "Apple sign-in is disabled for the project; enable Apple in the Firebase console (Authentication, Sign-in method)", approve: true, disable: true),
    ]

    @Test(arguments: cases)
    func aHostedPageFailureSaysWhatToDoOnThePageAndInTokenctl(_ failure: Case) async throws {
        try await SignInWithAppleTests().withApple { world, standIn in
            if failure.approve { standIn.approveNext(as: .init(id: "001.hosted.failure", email: "hf@privaterelay.appleid.com")) }
            if failure.disable { world.fake.update { $0.disabledProviders = ["apple.com"] } }
            var page = ""
            let login = try await OIDCMockTests.tokenctlSigningIn(world, ["login", "work", "--idp", "apple.com"], url: { $0.hasPrefix("http://localhost:") }) { url in
                page = try await HeadlessChromium.clickThroughHostedPage(at: url, home: world.keyring.root)
            }
            #expect(login.status == failure.exit, "\(login.output)")
            #expect(page.trimmingCharacters(in: .whitespacesAndNewlines) == "Sign-in failed (\(failure.code)): \(failure.advice).", "the page ended on: \(page)")
            #expect(login.output.contains("\(failure.code): \(failure.advice)"), "\(login.output)")
            #expect(try await world.storedSession() == nil)
        }
    }
}
