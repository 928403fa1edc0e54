// What every provider does to a refresh answer before the engine sees it: dates it by the
// provider's clock and takes the secrets sent out of its messages (OIDC and Firebase alike).
import Foundation
import TokendCore

extension RefreshOutcome {
    /// A refresh answer read against the provider's own clock, its `Date` header (RFC 9110
    /// §6.6.1: an origin server with a clock sends it). A token whose `exp` is not after that
    /// was dead when it was handed out (a provider or proxy answering from a cache): never
    /// served, the refresh is tried again with backoff and the held tokens stay. Otherwise the
    /// provider's time goes with the tokens, so that a token's life counts only what is left of
    /// it (`TokenSet.merging`). A JWT past by this machine's clock alone is served: that clock
    /// may be wrong, and lifetimes count from when the request went out (docs/security.md).
    func dated(_ dateHeader: String?) -> RefreshOutcome {
        guard case .refreshed(var issued) = self, let providerTime = dateHeader.flatMap(HTTPDate.parse) else { return self }
        let expiries = [issued.idToken, issued.accessToken].compactMap { $0.flatMap { JWTClaims(token: $0)?.expiresAt } }
        if let dead = expiries.min(), dead <= providerTime {
            let late = Int(providerTime.timeIntervalSince(dead))  // conversion: both instants are within 1970…9999
            return .transient(RefreshFailure(
                code: "stale_token",
                message: "the provider answered with a token that had expired \(late) s before, by its own clock (a cached answer?); tokend asks again"), retryAfter: nil)
        }
        issued.providerTime = providerTime
        return .refreshed(issued)
    }

    /// Belt and braces: should a provider ever echo the refresh token in an error message, it
    /// must not travel on into logs and status output.
    func redacting(_ secret: String) -> RefreshOutcome {
        func clean(_ failure: RefreshFailure) -> RefreshFailure {
            guard !secret.isEmpty, failure.message.contains(secret) else { return failure }
            return RefreshFailure(code: failure.code, message: failure.message.replacing(secret, with: "[redacted]"))
        }
        switch self {
        case .refreshed: return self
        case .transient(let failure, let retryAfter): return .transient(clean(failure), retryAfter: retryAfter)
        case .needsLogin(let failure): return .needsLogin(clean(failure))
        case .misconfigured(let failure): return .misconfigured(clean(failure))
        }
    }
}
