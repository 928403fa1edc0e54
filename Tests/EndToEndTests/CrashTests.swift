import Foundation
import Testing
import TokendCore
import TokendProtocol
import TokendFakes
import TokendTestSupport

/// Issue 3, item 4: `kill -9` at each step of a refresh, repeated, with a rotating provider.
/// After a restart the daemon serves a live token, or — only when the response was lost and the
/// provider revoked the old refresh token — reports needs_login. It never serves a dead token and
/// never silently keeps a superseded refresh token.
@Suite struct CrashTests {
    enum Step: String, CaseIterable, CustomTestStringConvertible {
        /// Between refreshes: nothing in flight.
        case idle
        /// The request reached the provider, which rotated and is slow to answer.
        case inFlight
        /// The answer arrived; the keyring write is stuck (gnome-keyring frozen).
        case afterResponseBeforeWrite
        /// The rotated refresh token is in the keyring.
        case afterWrite

        var testDescription: String { rawValue }
        var losesTheResponse: Bool { self == .inFlight || self == .afterResponseBeforeWrite }
    }

    static let rounds = 3

    @Test(arguments: Step.allCases, [false, true])
    func killNineAtAStepOfARefresh(step: Step, providerRevokesOldTokens: Bool) async throws {
        var options = FakeFirebase.Options()
        options.rotate = true
        options.revokePrevious = providerRevokesOldTokens
        try await withWorld(options: options) { world in
            var session = try await world.importNewUser()
            for round in 0..<Self.rounds {
                let answered = world.fake.requests.filter { $0.status == 200 }.count
                var background: Task<Void, Never>? = nil
                switch step {
                case .idle:
                    break
                case .inFlight:
                    // Longer than anything before the kill may take on a loaded machine: the answer
                    // must not arrive first. The fake logs the request when it takes it.
                    world.fake.update { $0.latency = 120 }
                    let logged = world.fake.requests.count
                    background = Task.detached { _ = try? await world.tokenctl(["refresh", "work"]) }
                    #expect(await world.fake.waitForRequests(count: logged + 1, timeout: Patience.seconds), "the refresh never reached the fake")
                case .afterResponseBeforeWrite:
                    try world.keyring.pauseKeyring()
                    background = Task.detached { _ = try? await world.tokenctl(["refresh", "work"]) }
                    try await poll("the provider answered") { world.fake.requests.filter { $0.status == 200 }.count > answered }
                case .afterWrite:
                    #expect(try await world.tokenctl(["refresh", "work"]).status == 0)
                    try await poll("rotated token stored") {
                        try await world.storedSession()?.refreshToken == world.fake.newestRefreshToken(uid: session.uid)
                    }
                }
                world.kill9()
                if step == .afterResponseBeforeWrite { try world.keyring.resumeKeyring() }
                world.fake.update { $0.latency = 0 }
                await background?.value
                try await world.startDaemon()

                // The held token (an hour long) is alive: it is served, and it is not dead.
                let token = try await world.tokenctl(["token", "work", "--min-valid", "1"])
                #expect(token.status == 0, "round \(round): \(token.stderr)")
                if let expiry = JWTClaims(token: token.stdout.trimmingCharacters(in: .newlines))?.expiresAt {
                    #expect(expiry.timeIntervalSinceNow > 1, "a dead token was served")
                }
                // The next refresh tells whether the stored refresh token is still the current one.
                let refresh = try await world.tokenctl(["refresh", "work"])
                if step.losesTheResponse && providerRevokesOldTokens {
                    #expect(refresh.status == 77, "round \(round): the lost response left a revoked token, which must be reported: \(refresh.stderr)")
                    #expect(try await world.tokenctl(["token", "work"]).status == 77)
                    session = try await world.importNewUser()
                } else {
                    #expect(refresh.status == 0, "round \(round): \(refresh.stderr)")
                    try await poll("keyring holds the newest refresh token") {
                        try await world.storedSession()?.refreshToken == world.fake.newestRefreshToken(uid: session.uid)
                    }
                }
            }
        }
    }
}
