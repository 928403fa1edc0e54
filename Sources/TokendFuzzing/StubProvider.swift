import Synchronization
import TokendCore
import TokendProviders

/// Every secret the fuzz world minted during the current input (the stored session it seeded and
/// every token the stub provider issued; no reply may carry one the request did not), and how
/// often the provider was asked.
final class SecretLedger: Sendable {
    enum Kind: Sendable { case refresh, bearer }
    struct Secret: Sendable {
        var value: String
        var kind: Kind
    }

    /// In every secret, so one search tells whether a reply can hold any.
    static let marker = "SeCrEt-"

    private let secrets = Mutex<[Secret]>([])
    private let refreshes = Atomic<Int>(0)
    /// Differs per process and per secret, so no input (nor a fuzzer's dictionary of values it
    /// saw compared) can carry a secret of the current run.
    private let salt = UInt64.random(in: 0...UInt64.max)
    private let counter = Atomic<UInt64>(0)

    /// A fresh secret whose first byte is `lead`: the stub reads its behaviour from that byte, so
    /// a rotated refresh token behaves like the one it replaced.
    func mint(_ kind: Kind, lead: Character) -> String {
        let serial = counter.add(1, ordering: .relaxed).newValue
        let value = "\(lead)\(Self.marker)\(kind == .refresh ? "rt" : "bt")-\(String(salt ^ serial, radix: 36))-\(serial)"
        secrets.withLock { $0.append(Secret(value: value, kind: kind)) }
        return value
    }

    var all: [Secret] { secrets.withLock { $0 } }

    /// Refreshes the stub was asked for since `forget()`.
    var refreshCount: Int { refreshes.load(ordering: .relaxed) }

    func countRefresh() { refreshes.add(1, ordering: .relaxed) }

    func forget() {
        secrets.withLock { $0.removeAll(keepingCapacity: true) }
        refreshes.store(0, ordering: .relaxed)
    }
}

/// A provider with no network: what it answers is read from the first byte of the refresh token
/// it is given, which the fuzzer controls through `import`. It keeps the provider contract the
/// real ones keep (a success always says how long its tokens live; messages carry no token).
struct StubProvider: TokenProvider {
    let kind: ProviderKind
    let ledger: SecretLedger
    let clock: any WallClock
    let timers: any TimerSource

    /// Longer than the fuzz requests' 0.02 s timeout, so the "refresh outlasted timeout" paths run;
    /// short enough that an input full of them still takes well under a second.
    static let slowAnswer: Double = 0.03

    func refresh(refreshToken: String) async -> RefreshOutcome {
        ledger.countRefresh()
        let lead = refreshToken.utf8.first ?? 0
        // Bytes from 0xF0 (4-byte UTF-8 leads) answer late; the rest pick the answer below.
        if lead >= 0xF0 { _ = await timers.sleep(seconds: Self.slowAnswer, from: clock) }
        let keep = refreshToken.first ?? "0"
        switch lead % 8 {
        case 0: return .refreshed(issue(id: true, access: true, lifetime: 3600, rotate: keep))
        case 1: return .refreshed(issue(id: true, access: false, lifetime: 3600, rotate: nil))
        case 2: return .refreshed(issue(id: false, access: true, lifetime: 30, rotate: nil))
        // One-second tokens, dead on arrival (a lifetime's last second is never counted): no
        // `min_valid` can be met, and the account refreshes as often as the daemon lets it.
        case 3: return .refreshed(issue(id: true, access: true, lifetime: 1, rotate: keep))
        case 4: return .transient(RefreshFailure(code: "network", message: "connection refused (stub)"), retryAfter: nil)
        case 5: return .transient(RefreshFailure(code: "http_429", message: "rate limited (stub)"), retryAfter: 120)
        case 6: return .needsLogin(RefreshFailure(code: "TOKEN_EXPIRED", message: "the session ended (stub)"))
        default: return .misconfigured(RefreshFailure(code: "INVALID_API_KEY", message: "the API key is wrong (stub)"))
        }
    }

    private func issue(id: Bool, access: Bool, lifetime: Double, rotate lead: Character?) -> IssuedTokens {
        IssuedTokens(
            refreshToken: lead.map { ledger.mint(.refresh, lead: $0) },
            idToken: id ? ledger.mint(.bearer, lead: "i") : nil,
            accessToken: access ? ledger.mint(.bearer, lead: "a") : nil,
            expiresIn: lifetime)
    }
}
