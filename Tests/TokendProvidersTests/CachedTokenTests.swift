import Foundation
import Testing
import TokendCore
import TokendFakes
@testable import TokendProviders

/// A refresh answer whose JWT is already past its `exp` (issue 34): a provider, or a cache in
/// front of it, handing out a token it issued long ago. The provider's `Date` header is the
/// referee, not this machine's clock. Before, the token's life was counted as `exp − iat` from
/// the request, so a dead token was served for a whole lifetime.
@Suite struct CachedTokenTests {
    /// An unsigned JWT with these instants (the refresh path reads claims; it checks no signature).
    static func jwt(iat: Date, exp: Date) -> String {
        let payload = #"{"sub":"u","iat":\#(Int(iat.timeIntervalSince1970)),"exp":\#(Int(exp.timeIntervalSince1970))}"#
        return "e30.\(JWTClaims.base64URLEncode(Data(payload.utf8)))."
    }

    /// `provider.refresh` answered by one scripted 200 carrying `token`, dated `date`.
    func refresh(token: String, expiresIn: Int = 3600, date: Date?) async throws -> (RefreshOutcome, sentAt: Date) {
        let fake = try await FakeOIDC.start()
        let transport = HTTPTransport(environment: [:])
        let provider = OIDCProvider(settings: .init(issuer: fake.issuer, clientID: "cli"), transport: transport)
        fake.script([.init(
            body: #"{"access_token":"opaque","id_token":"\#(token)","token_type":"Bearer","expires_in":\#(expiresIn)}"#,
            headers: date.map { ["Date": IDTokenCheckTests.httpDate($0)] } ?? [:])])
        let sentAt = Date()
        let outcome = await provider.refresh(refreshToken: "r")
        await transport.shutdown()
        await fake.shutdown()
        return (outcome, sentAt)
    }

    @Test func aTokenDeadByTheProvidersOwnClockIsNotServedAndTheRefreshIsTriedAgain() async throws {
        let now = Date()
        let (outcome, _) = try await refresh(token: Self.jwt(iat: now - 7200, exp: now - 3600), date: now)
        guard case .transient(let failure, _) = outcome else { Issue.record("served: \(outcome)"); return }
        #expect(failure.code == "stale_token", "\(failure)")
    }

    @Test func aCachedTokenLivesOnlyWhatIsLeftOfItByTheProvidersClock() async throws {
        let now = Date()
        let (outcome, sentAt) = try await refresh(token: Self.jwt(iat: now - 3300, exp: now + 300), date: now)
        guard case .refreshed(let issued) = outcome else { Issue.record("\(outcome)"); return }
        let tokens = TokenSet(refreshToken: "r").merging(issued, sentAt: sentAt, at: Date())
        let expiry = try #require(tokens.idTokenExpiresAt)
        // Counted from the request (sent after the fake started, which a loaded machine slows).
        #expect(expiry <= sentAt + 300, "served for \(expiry.timeIntervalSince(sentAt)) s; it has 300 s left")
    }

    /// This machine's clock two hours ahead of the provider's: by it the token is dead, by the
    /// provider's it has an hour; it is served for that hour, counted from the request.
    @Test func aTokenPastOnlyByThisMachinesClockIsServed() async throws {
        let providerNow = Date() - 7200
        let (outcome, sentAt) = try await refresh(token: Self.jwt(iat: providerNow, exp: providerNow + 3600), date: providerNow)
        guard case .refreshed(let issued) = outcome else { Issue.record("\(outcome)"); return }
        let tokens = TokenSet(refreshToken: "r").merging(issued, sentAt: sentAt, at: Date())
        #expect(try #require(tokens.idTokenExpiresAt).timeIntervalSince(sentAt) > 3500)
    }
}
