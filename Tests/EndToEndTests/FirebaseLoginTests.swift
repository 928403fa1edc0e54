import Foundation
import Testing
import TokendCore
import TokendProtocol
import TokendTestSupport

/// Issue 10, sign-in: `tokenctl login` through the real tokend into a real keyring, against the
/// fake Firebase project's Identity Toolkit API.
@Suite(.serialized) struct FirebaseLoginTests {
    @Test func anonymousLoginStoresTheSessionAndServesItsToken() async throws {
        let world = try await DaemonHarness.start()
        defer { Task { await world.shutdown() } }
        let run = try await world.tokenctl(["login", "work", "--anonymous"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.hasPrefix("work signed in (anonymous)"), "\(run.stdout)")
        let signUp = try #require(world.fake.requests.last { $0.path.hasSuffix("accounts:signUp") })
        #expect(try await world.storedSession()?.refreshToken == signUp.issuedRefreshToken)
        let token = try await world.tokenctl(["token", "work"])
        #expect(token.status == 0)
        #expect(token.stdout == (signUp.issuedIDToken ?? "-") + "\n")
    }
}
