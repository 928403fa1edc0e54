import Foundation

/// A way for any route of any fake to misbehave (`FaultLayer`). A fault replaces the route's normal
/// handling and never changes the fake's state: a refresh that failed by fault does not rotate.
///
/// | fault | what the client sees | source |
/// | --- | --- | --- |
/// | `status` | the status (503, 500, 502, 504, 408, 429…) with Google's error envelope for it, or `body` as written; `Retry-After` and any `headers` | Google Cloud API design guide, "Errors" (the envelope and the status names); RFC 9110 §10.2.3 (`Retry-After`); Google's front ends serve HTML for 502 (recording) |
/// | `firebaseError` | Google's envelope, `message` a Firebase code (`TOKEN_EXPIRED`, `CODE : detail`) | docs/architecture.md, "Provider facts"; Firebase Auth REST API reference, "Common error codes" |
/// | `oauthError` | `{"error": …, "error_description": …}` | RFC 6749 §5.2 |
/// | `refuse` | the connection reset (RST) before the body is read | RFC 9293 §3.5.2 (reset); what a closed port or a crashed peer gives |
/// | `drop` | the connection closed with no answer | RFC 9112 §9.6 (a server may close at any time); load balancers' idle cuts |
/// | `dropMidResponse` | the head with the full `Content-Length`, half the body, then close | RFC 9112 §6.3 (an incomplete message) |
/// | `hang` | no answer; the connection stays open | a stalled peer (no document promises an answer) |
/// | `trickle` | the head, then a byte every `trickleInterval` | slow-read attacks (CVE-2007-6750 class), a congested link |
/// | `delay` | the route's usual answer, after the seconds given | a slow provider: RFC 9110 leaves the time to answer open |
/// | `malformedJSON` | 200 with an HTML page labelled JSON | a captive portal (RFC 8952 §1) or a proxy's error page |
/// | `missingFields` | 200 JSON without the token fields | RFC 6749 §5.1 (what a success must hold, here not held) |
/// | `redirect` | a 3xx with `Location` | RFC 9110 §15.4 |
public enum FakeFault: Sendable, Equatable {
    case status(Int, retryAfter: Int? = nil, body: String? = nil, headers: [String: String] = [:])
    case firebaseError(String, status: Int = 400)
    case oauthError(String, status: Int = 400)
    /// Decided per request, not per accepted connection, so keep-alive pools cannot dodge it and
    /// the control plane on the same port stays reachable.
    case refuse
    case drop
    case dropMidResponse
    case hang
    case trickle
    case delay(Double)
    case malformedJSON
    case missingFields
    /// A client that follows it re-sends what it sent (a refresh token) there; the fake logs it.
    case redirect(Int, location: String)

    /// A byte every 200 ms: each read sees progress (so a per-read timeout never fires), and a
    /// token answer of a KiB takes minutes.
    static let trickleInterval = 0.2

    /// Faults after which no complete answer reached the client: logged with a nil status.
    var answersCompletely: Bool {
        switch self {
        case .refuse, .drop, .dropMidResponse, .hang, .trickle: false
        case .status, .firebaseError, .oauthError, .delay, .malformedJSON, .missingFields, .redirect: true
        }
    }
}

extension FakeFault: Encodable {
    /// As the control plane takes it (`ControlWire.Fault`).
    public func encode(to encoder: any Encoder) throws { try ControlWire.Fault(self).encode(to: encoder) }
}

extension FakeFirebase {
    /// The fake Firebase's faults are every fake's.
    public typealias Fault = FakeFault
}

/// The queue of injected faults, each aimed at a route, consumed in injection order.
struct FaultSchedule: Sendable {
    enum Budget: Sendable, Equatable {
        /// The next N requests.
        case requests(Int)
        /// Every request before this instant.
        case until(Date)
        /// As injected: seconds from the moment of injection (converted on insertion).
        case seconds(Double)
    }

    /// Which requests a fault is for: a path, a path prefix (`/identitytoolkit.googleapis.com/*`),
    /// or `*`, any route but the control plane.
    struct Target: Sendable, Equatable {
        var pattern: String

        func matches(_ path: String) -> Bool {
            pattern.hasSuffix("*") ? path.hasPrefix(pattern.dropLast()) : path == pattern
        }
    }

    struct Entry: Sendable {
        var fault: FakeFault
        var budget: Budget
        var target: Target
        /// Seconds the fault's answer is held back (a scripted answer that is also slow).
        var late: Double
    }

    private var entries: [Entry] = []

    /// Queues `fault`. An empty budget (count ≤ 0, seconds ≤ 0) is ignored rather than trapped on:
    /// a script computing a count of zero means "no fault".
    mutating func add(_ fault: FakeFault, budget: Budget, target: Target, late: Double = 0, now: Date) {
        switch budget {
        case .requests(let count) where count > 0:
            entries.append(Entry(fault: fault, budget: .requests(count), target: target, late: late))
        case .seconds(let seconds) where seconds > 0:
            entries.append(Entry(fault: fault, budget: .until(now.addingTimeInterval(seconds)), target: target, late: late))
        case .until(let deadline) where deadline > now:
            entries.append(Entry(fault: fault, budget: .until(deadline), target: target, late: late))
        default:
            break
        }
    }

    mutating func removeAll() {
        entries.removeAll()
    }

    /// The first fault aimed at `path` for a request arriving at `now`, spending one unit of a
    /// counted budget.
    mutating func take(for path: String, at now: Date) -> Entry? {
        entries.removeAll { entry in
            if case .until(let deadline) = entry.budget { return deadline <= now }
            return false
        }
        guard let index = entries.firstIndex(where: { $0.target.matches(path) }) else { return nil }
        let entry = entries[index]
        if case .requests(let remaining) = entry.budget {
            if remaining <= 1 { entries.remove(at: index) } else { entries[index].budget = .requests(remaining - 1) }
        }
        return entry
    }
}

extension FakeFault: CustomStringConvertible {
    /// Short and token-free, for log lines: `status 503 retry-after 5`, `firebase_error TOKEN_EXPIRED`.
    public var description: String {
        switch self {
        case .status(let status, let retryAfter, let body, _):
            "status \(status)" + (retryAfter.map { " retry-after \($0)" } ?? "") + (body == nil ? "" : " custom-body")
        case .firebaseError(let message, let status): "firebase_error \(message) (\(status))"
        case .oauthError(let code, let status): "oauth_error \(code) (\(status))"
        case .delay(let seconds): "delay \(seconds) s"
        case .redirect(let status, _): "redirect \(status)"
        default: ControlWire.Fault(self).fault
        }
    }
}
