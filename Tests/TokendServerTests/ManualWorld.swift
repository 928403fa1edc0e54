import Logging
import Synchronization
import Testing
import TokendCore
import TokendKeyring
import TokendProtocol
import TokendProviders
@testable import TokendServer
import TokendTestSupport

/// A provider that answers nothing by itself: each refresh the engine asks for is handed to the
/// test (`nextCall`), which answers it. No HTTP, no timing: the test decides what the provider
/// says and when.
final class ScriptedProvider: TokenProvider {
    struct Call: Sendable {
        let refreshToken: String
        fileprivate let reply: CheckedContinuation<RefreshOutcome, Never>
        func answer(_ outcome: RefreshOutcome) { reply.resume(returning: outcome) }
    }

    private struct State {
        var pending: [Call] = []
        var waiter: CheckedContinuation<Call, Never>?
        var count = 0
    }

    let kind = ProviderKind(rawValue: "scripted")
    private let state = Mutex(State())

    func refresh(refreshToken: String) async -> RefreshOutcome {
        await withCheckedContinuation { reply in
            let call = Call(refreshToken: refreshToken, reply: reply)
            let waiter = state.withLock { state -> CheckedContinuation<Call, Never>? in
                state.count += 1
                guard let waiter = state.waiter else {
                    state.pending.append(call)
                    return nil
                }
                state.waiter = nil
                return waiter
            }
            waiter?.resume(returning: call)
        }
    }

    /// The next refresh the engine asked for (waits for it: guard the test with a time limit).
    func nextCall() async -> Call {
        await withCheckedContinuation { waiter in
            let ready = state.withLock { state -> Call? in
                guard state.pending.isEmpty else { return state.pending.removeFirst() }
                state.waiter = waiter
                return nil
            }
            if let ready { waiter.resume(returning: ready) }
        }
    }

    /// Refreshes asked for so far.
    var callCount: Int { state.withLock { $0.count } }
}

/// An engine on the manual clock: the clock is also its only timer source, so nothing fires
/// unless the test advances it; an in-memory keyring and a scripted provider for every account.
struct ManualWorld {
    let clock = ManualClock()
    let provider = ScriptedProvider()
    let store = InMemorySecretStore(timeout: 2)
    let hub = EventHub()
    let engine: AccountEngine
    /// The manual clock's start: every session below is issued then.
    var t0: Date { Date(timeIntervalSince1970: 1_800_000_000) }

    /// `jitterDraw` is every jitter and backoff draw (fixed, so deadlines are exact).
    init(jitterDraw: Double = 0) {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let provider = provider
        engine = AccountEngine(
            store: store, clock: clock, timers: clock, hub: hub, logger: logger, drawJitter: { jitterDraw }, makeProvider: { _ in provider })
    }

    static func configuration(_ names: [String], refreshBefore: Double = 300) -> Configuration {
        Configuration(accounts: Dictionary(uniqueKeysWithValues: names.map { name in
            (name, AccountConfiguration(name: name, provider: .firebase(apiKey: "k", emulatorHost: nil), refreshBefore: refreshBefore))
        }))
    }

    /// Stores an hour-long session for each account (issued now), then starts the accounts.
    func start(_ names: [String], lifetime: Double = 3600) async {
        await store(names, lifetime: lifetime)
        await engine.apply(Self.configuration(names))
    }

    /// Stores a session for each account, issued now and living `lifetime` seconds.
    func store(_ names: [String], lifetime: Double = 3600) async {
        let now = clock.now()
        for name in names {
            let tokens = TokenSet(
                refreshToken: "rt-\(name)", idToken: "id-\(name)", idTokenExpiresAt: now.addingTimeInterval(lifetime), issuedAt: now)
            _ = await store.save(tokens, account: name)
        }
    }

    /// The instant the account's timer is armed for, if any.
    func armed(_ name: String) async -> Date? {
        await engine.accounts[name]?.armedDeadline
    }

    func state(_ name: String) async -> String? {
        try? await engine.statuses(account: name).get().first?.state
    }
}

extension AsyncStream<Event>.Iterator {
    /// The next event of `kind` (others are skipped).
    mutating func next(_ kind: Event.Kind) async -> Event? {
        while let event = await next() {
            if event.event == kind { return event }
        }
        return nil
    }
}

/// An answer that lives an hour.
func freshTokens(_ id: String) -> RefreshOutcome {
    .refreshed(IssuedTokens(idToken: id, expiresIn: 3600))
}
