import Testing
import TokendCore
import TokendFakes
import TokendTestSupport
@testable import TokendProviders

/// `FirebaseProvider` against the fake Secure Token API over real HTTP, and `HTTPTransport`'s
/// rules (one deadline for the whole exchange, no redirects) through it.
@Suite("FirebaseProvider", .timeLimit(.minutes(1)))
struct FirebaseProviderTests {
    @Test func tokenURLEscapesTheKeyAndFollowsTheEmulatorConvention() async {
        let transport = HTTPTransport(environment: [:])
        #expect(FirebaseProvider(apiKey: "a b&c", emulatorHost: nil, transport: transport).tokenURL
            == "https://securetoken.googleapis.com/v1/token?key=a+b%26c")
        #expect(FirebaseProvider(apiKey: "k", emulatorHost: "127.0.0.1", transport: transport).tokenURL
            == "http://127.0.0.1:9099/securetoken.googleapis.com/v1/token?key=k")
        await transport.shutdown()
    }

    @Test func refreshSendsTheRefreshTokenAndReadsTheAnswer() async throws {
        try await withProvider { fake, provider in
            let session = fake.createUser(email: "ada@example.com", password: "secret-1")
            guard case .refreshed(let issued) = await provider.refresh(refreshToken: session.refreshToken) else {
                Issue.record("expected a refresh"); return
            }
            #expect(issued.idToken != nil && issued.idToken == issued.accessToken)
            #expect(issued.expiresIn == 3600)
            let request = try #require(fake.requests.last)
            #expect(request.grantType == "refresh_token")
            #expect(request.presentedRefreshToken == session.refreshToken)
        }
    }

    @Test func aRevokedSessionNeedsLoginAndABadKeyIsMisconfigured() async throws {
        try await withProvider { fake, provider in
            let session = fake.createUser()
            fake.revokeTokens(session.uid)
            guard case .needsLogin = await provider.refresh(refreshToken: session.refreshToken) else { Issue.record("expected needsLogin"); return }
        }
        try await withProvider(apiKey: "invalid-key") { fake, provider in
            let session = fake.createUser()
            guard case .misconfigured = await provider.refresh(refreshToken: session.refreshToken) else { Issue.record("expected misconfigured"); return }
        }
    }

    /// A 307/308 would re-POST the refresh token and API key wherever `Location` says: the
    /// redirect is reported, and nothing reaches its target.
    @Test(arguments: [307, 308, 302])
    func aRedirectIsNeverFollowed(status: Int) async throws {
        try await withProvider { fake, provider in
            let session = fake.createUser()
            fake.faults.inject(.redirect(status, location: "http://127.0.0.1:\(fake.port)/elsewhere"), count: 1)
            let outcome = await provider.refresh(refreshToken: session.refreshToken)
            guard case .transient(let failure, _) = outcome else { Issue.record("expected transient, got \(outcome)"); return }
            #expect(failure.code == "redirect")
            #expect(!fake.requests.contains { $0.path == "/elsewhere" })
            #expect(fake.requests.count == 1)
        }
    }

    /// A body trickled a byte at a time must not hold a refresh past the transport's deadline.
    @Test func aTrickledBodyEndsAtTheDeadline() async throws {
        try await withProvider(deadline: 1) { fake, provider in
            let session = fake.createUser()
            fake.faults.inject(.trickle, count: 1)
            let outcome = await provider.refresh(refreshToken: session.refreshToken)
            guard case .transient(let failure, _) = outcome else { Issue.record("expected transient, got \(outcome)"); return }
            #expect(failure.code == "timeout")
        }
    }

    /// A 200 whose `refresh_token` is empty is a broken answer: the held token is kept.
    @Test func anEmptyRefreshTokenIsMalformed() async throws {
        try await withProvider { fake, provider in
            let session = fake.createUser()
            fake.faults.inject(.status(200, body: #"{"id_token":"a.b.c","refresh_token":"","expires_in":"3600"}"#), count: 1)
            let outcome = await provider.refresh(refreshToken: session.refreshToken)
            guard case .transient(let failure, _) = outcome else { Issue.record("expected transient, got \(outcome)"); return }
            #expect(failure.code == "malformed_response")
        }
    }

    @Test func errorsNeverCarryTheRefreshToken() async throws {
        try await withProvider { fake, provider in
            let canary = "canary-refresh-token-\(fake.port)"
            fake.faults.inject(.status(400, body: #"{"error":{"code":400,"message":"INVALID_REFRESH_TOKEN : \#(canary)"}}"#), count: 1)
            let outcome = await provider.refresh(refreshToken: canary)
            guard case .needsLogin(let failure) = outcome else { Issue.record("expected needsLogin, got \(outcome)"); return }
            #expect(!failure.message.contains(canary))
        }
    }

    @Test func firebaseCannotRevokeAndSaysSo() async throws {
        try await withProvider { _, provider in
            guard case .unsupported = await provider.revoke(refreshToken: "r") else { Issue.record("expected unsupported"); return }
        }
    }

    private func withProvider(
        apiKey: String = "k", deadline: Double = HTTPTransport.defaultDeadline, _ body: (FakeFirebase, FirebaseProvider) async throws -> Void
    ) async throws {
        let fake = try await FakeFirebase.start()
        let transport = HTTPTransport(environment: [:], deadline: deadline)
        do {
            try await body(fake, FirebaseProvider(apiKey: apiKey, emulatorHost: fake.emulatorHost, transport: transport))
        } catch {
            await transport.shutdown()
            try await fake.shutdown()
            throw error
        }
        await transport.shutdown()
        try await fake.shutdown()
    }
}
