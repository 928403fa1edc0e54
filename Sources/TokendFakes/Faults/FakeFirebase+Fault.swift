import Foundation

extension FakeFirebase {
    /// A way for the token endpoint to misbehave. A fault replaces normal handling entirely and
    /// never changes user or token state: a refresh that failed by fault does not rotate.
    public enum Fault: Sendable, Equatable {
        /// Answer with this HTTP status (503, 500, 502, 504, 408, 429…), a `Retry-After` header when
        /// given, and `body` or else Google's error envelope for the status.
        case status(Int, retryAfter: Int? = nil, body: String? = nil)
        /// Google's envelope with `message` set to a Firebase code such as `TOKEN_EXPIRED`,
        /// `TOO_MANY_ATTEMPTS_TRY_LATER` or `PROJECT_NUMBER_MISMATCH` (`CODE : detail` works too).
        case firebaseError(String, status: Int = 400)
        /// An RFC 6749 §5.2 body, `{"error":"invalid_grant","error_description":"…"}`.
        case oauthError(String, status: Int = 400)
        /// Reset the connection (RST) as soon as the request line shows a token request, before
        /// its body is read: the nearest a live listener gets to "connection refused". Decided
        /// per request, not per accepted connection, so keep-alive pools cannot dodge it and the
        /// control plane on the same port stays reachable.
        case refuse
        /// Read the request, then close without answering.
        case drop
        /// Send the status line, the headers (with the full Content-Length) and half the body,
        /// then close.
        case dropMidResponse
        /// Read the request and never answer; the connection stays open until the client gives up.
        case hang
        /// 200 with a body that is not JSON (a captive portal's or proxy's HTML page).
        case malformedJSON
        /// 200 with JSON that lacks `id_token`, `access_token` and `expires_in`.
        case missingFields
        /// Send the head and then the body one byte every `trickleInterval`, never finishing
        /// within any sane deadline: a client must bound the whole exchange, not just the head.
        case trickle
        /// Answer `status` (307, 308, 302…) with `Location: location`. A client that follows it
        /// re-sends the refresh token there; the fake logs any request that arrives.
        case redirect(Int, location: String)
    }

    /// A byte every 200 ms: each read sees progress (so a per-read timeout never fires), and a
    /// token answer of a KiB takes minutes.
    static let trickleInterval = 0.2
}

extension FakeFirebase.Fault {
    /// Faults after which no complete answer reached the client: logged with a nil status.
    var answersCompletely: Bool {
        switch self {
        case .refuse, .drop, .dropMidResponse, .hang, .trickle: false
        case .status, .firebaseError, .oauthError, .malformedJSON, .missingFields, .redirect: true
        }
    }
}

/// The queue of injected faults, consumed by token-endpoint requests in injection order.
struct FaultSchedule: Sendable {
    enum Budget: Sendable, Equatable {
        /// The next N requests.
        case requests(Int)
        /// Every request before this instant.
        case until(Date)
        /// As injected: seconds from the moment of injection (converted on insertion).
        case seconds(Double)
    }

    private struct Entry: Sendable {
        var fault: FakeFirebase.Fault
        var budget: Budget
    }

    private var entries: [Entry] = []

    /// Queues `fault`. An empty budget (count ≤ 0, seconds ≤ 0) is ignored rather than trapped on:
    /// a script computing a count of zero means "no fault".
    mutating func add(_ fault: FakeFirebase.Fault, budget: Budget, now: Date) {
        switch budget {
        case .requests(let count) where count > 0:
            entries.append(Entry(fault: fault, budget: .requests(count)))
        case .seconds(let seconds) where seconds > 0:
            entries.append(Entry(fault: fault, budget: .until(now.addingTimeInterval(seconds))))
        case .until(let deadline) where deadline > now:
            entries.append(Entry(fault: fault, budget: .until(deadline)))
        default:
            break
        }
    }

    mutating func removeAll() {
        entries.removeAll()
    }

    /// The fault for a request arriving at `now`, spending one unit of a counted budget.
    mutating func take(at now: Date) -> FakeFirebase.Fault? {
        entries.removeAll { entry in
            if case .until(let deadline) = entry.budget { return deadline <= now }
            return false
        }
        guard var first = entries.first else { return nil }
        if case .requests(let remaining) = first.budget {
            if remaining <= 1 {
                entries.removeFirst()
            } else {
                first.budget = .requests(remaining - 1)
                entries[0] = first
            }
        }
        return first.fault
    }
}

extension FakeFirebase.Fault: CustomStringConvertible {
    /// Short and token-free, for log lines: `status 503 retry-after 5`, `firebase_error TOKEN_EXPIRED`.
    public var description: String {
        switch self {
        case .status(let status, let retryAfter, let body):
            "status \(status)" + (retryAfter.map { " retry-after \($0)" } ?? "") + (body == nil ? "" : " custom-body")
        case .firebaseError(let message, let status): "firebase_error \(message) (\(status))"
        case .oauthError(let code, let status): "oauth_error \(code) (\(status))"
        case .refuse: "refuse"
        case .drop: "drop"
        case .dropMidResponse: "drop_mid_response"
        case .hang: "hang"
        case .malformedJSON: "malformed_json"
        case .missingFields: "missing_fields"
        case .trickle: "trickle"
        case .redirect(let status, _): "redirect \(status)"
        }
    }
}
