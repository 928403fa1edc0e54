import Foundation
import Logging
import Testing
import TokendCore
import TokendKeyring
import TokendProtocol
import TokendProviders
import TokendTestSupport
@testable import TokendServer

/// The engine's side of `login`: one interactive login per account, cancelled with its client.
@Suite struct LoginEngineTests {
    /// A browser flow that shows its URL and then waits for a user who never comes.
    struct WaitingBrowser: TokenProvider {
        let kind = ProviderKind.oidc
        func refresh(refreshToken: String) async -> RefreshOutcome { .misconfigured(RefreshFailure(code: "n/a", message: "n/a")) }
        func login(_ request: LoginRequest) -> AsyncThrowingStream<LoginStep, any Error> {
            AsyncThrowingStream { continuation in
                continuation.yield(.openURL("https://idp.example.com/auth"))
            }
        }
    }

    func handler() async -> RequestRouter {
        let hub = EventHub()
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let engine = AccountEngine(store: InMemorySecretStore(timeout: 2), hub: hub, logger: logger) { _ in WaitingBrowser() }
        await engine.apply(Configuration(accounts: [
            "corp": AccountConfiguration(name: "corp", provider: .oidc(OIDCProvider.Settings(issuer: "https://idp.example.com", clientID: "c")), refreshBefore: 300)
        ]))
        return RequestRouter(engine: engine, hub: hub, version: "test")
    }

    /// The first line a login stream answers with.
    func firstLine(_ handler: RequestRouter) async -> (RequestRouter.StreamLine?, AsyncStream<RequestRouter.StreamLine>?) {
        guard case .stream(let stream) = await handler.handle(DecodedRequest(.login(LoginArgs(account: "corp", method: .browser, timeout: 60)))) else { return (nil, nil) }
        var iterator = stream.makeAsyncIterator()
        return (await iterator.next(), stream)
    }

    /// A method the account's provider does not offer (its descriptor's `loginMethods`) is refused
    /// by the engine with the ones it does, before any flow runs.
    @Test func aMethodTheProviderDoesNotOfferIsRefusedWithTheOnesItDoes() async throws {
        let handler = await handler()
        let request = DecodedRequest(.login(LoginArgs(account: "corp", method: .anonymous, timeout: 60)))
        guard case .stream(let stream) = await handler.handle(request) else { Issue.record("no stream"); return }
        var iterator = stream.makeAsyncIterator()
        guard case .response(let refusal)? = await iterator.next() else { Issue.record("expected a refusal"); return }
        #expect(refusal.error?.code == .badRequest)
        #expect(refusal.error?.message.contains("signs in with method browser or device, not anonymous") == true, "\(refusal.error?.message ?? "")")
    }

    @Test func oneInteractiveLoginAtATimeAndAClientLeavingFreesTheSlot() async throws {
        let handler = await handler()
        var (first, held) = await firstLine(handler)
        guard case .progress(let progress)? = first else { Issue.record("expected progress, got \(String(describing: first))"); return }
        #expect(progress.progress == .openURL)
        #expect(progress.url == "https://idp.example.com/auth")

        let (second, _) = await firstLine(handler)
        guard case .response(let refusal)? = second else { Issue.record("expected a refusal, got \(String(describing: second))"); return }
        #expect(refusal.error?.code == .unavailable)
        #expect(refusal.error?.message.contains("already waiting") == true)

        held = nil  // the first client goes away: its login is cancelled
        _ = held
        let deadline = Date().addingTimeInterval(20)
        var freed = false
        while Date() < deadline, !freed {
            if case .progress? = await firstLine(handler).0 { freed = true } else { try await Task.sleep(for: .milliseconds(50)) }
        }
        #expect(freed, "the slot was not freed after the first client left")
    }
}
