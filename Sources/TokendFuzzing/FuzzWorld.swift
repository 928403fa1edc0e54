import Logging
import TokendCore
import TokendKeyring
import TokendProtocol
import TokendServer
import TokendSystem
import TokendTestSupport

/// The daemon minus its socket, built once per process (libFuzzer runs millions of inputs in one)
/// and put back into a known state before each input.
final class FuzzWorld: Sendable {
    static let shared = FuzzWorld()

    /// Two accounts, one of each provider kind, so the per-kind defaults (`id` vs `access`) run.
    static let configurationText = """
        [account.work]
        provider = "firebase"
        api_key = "fuzz-key"

        [account.corp]
        provider = "oidc"
        issuer = "https://issuer.invalid"
        client_id = "fuzz-client"
        """
    /// A hung keyring answers `.timedOut` after this: long enough to be a real suspension, short
    /// enough not to slow the fuzzer (one input in eight has a hung keyring).
    static let keyringTimeout = 0.002

    let store = InMemorySecretStore(timeout: FuzzWorld.keyringTimeout)
    let hub = EventHub()
    let ledger = SecretLedger()
    let engine: AccountEngine
    let handler: RequestRouter
    let configuration: Configuration

    private init() {
        do {
            configuration = try Configuration.parse(Self.configurationText, path: "fuzz.toml", environment: [:])
        } catch {
            invariantBroken("the fuzz configuration does not parse: \(error)")
        }
        let ledger = ledger
        let clock = ForwardClock()  // the daemon's
        let timers = SystemTimerSource(clock: clock)
        // A fixed jitter draw: the same input must take the same backoff every time it replays.
        engine = AccountEngine(
            store: store, clock: clock, timers: timers, hub: hub, logger: Logger(label: "tokend.fuzz") { _ in SwiftLogNoOpLogHandler() },
            drawJitter: { 0.5 }, makeProvider: { StubProvider(kind: $0.kind, ledger: ledger, clock: clock, timers: timers) })
        handler = RequestRouter(engine: engine, hub: hub, version: "fuzz")
    }

    /// Forgets every account and stored session, then starts over with a keyring `mood` and,
    /// depending on `random`, a session already stored for `work`: the states a daemon starts in.
    func reset(using random: inout SplitMix64) async {
        await engine.apply(Configuration(path: "fuzz.toml"))
        store.hang = false
        store.simulatedState = .available
        for name in configuration.accounts.keys { _ = await store.delete(account: name) }
        ledger.forget()
        let now = engine.clock.now()
        // The stored refresh token's first byte picks the stub's answer (StubProvider).
        let lead = Character(String(random.below(8)))
        switch random.below(4) {
        case 0: break
        case 1: _ = await store.save(session(lead: lead, expiresAt: now.addingTimeInterval(3600), issuedAt: now), account: "work")
        case 2: _ = await store.save(session(lead: lead, expiresAt: now.addingTimeInterval(-60), issuedAt: now.addingTimeInterval(-3660)), account: "work")
        default: _ = await store.save(TokenSet(refreshToken: ledger.mint(.refresh, lead: lead)), account: "work")
        }
        // Mostly a working keyring: the other moods mostly end every request at the same error.
        switch random.below(8) {
        case 0: store.simulatedState = .locked
        case 1: store.simulatedState = .unavailable
        case 2: store.hang = true
        default: break
        }
        await engine.apply(configuration)
    }

    private func session(lead: Character, expiresAt: Date, issuedAt: Date) -> TokenSet {
        TokenSet(
            refreshToken: ledger.mint(.refresh, lead: lead), idToken: ledger.mint(.bearer, lead: "i"), idTokenExpiresAt: expiresAt,
            accessToken: ledger.mint(.bearer, lead: "a"), accessTokenExpiresAt: expiresAt, issuedAt: issuedAt)
    }

    /// Waits until no refresh is in flight, so nothing of this input leaks into the next one.
    /// False if one is still running after `limit` seconds: a refresh that never ends is a bug
    /// (every request waiting on it would wait out its timeout forever after).
    func settle(limit: Double) async -> Bool {
        let deadline = engine.clock.now().addingTimeInterval(limit)
        while engine.clock.now() < deadline {
            let statuses = (try? await engine.statuses(account: nil).get()) ?? []
            if !statuses.contains(where: { $0.state == "refreshing" }) { return true }
            _ = await engine.timers.sleep(seconds: 0.001, from: engine.clock)
        }
        return false
    }
}
