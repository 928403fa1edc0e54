import Foundation
import Synchronization
import TokendCore
import TokendProviders
import TokendSystem

extension FakeFirebase {
    /// Everything the fake knows and decides, behind one lock; no sockets. The connection layer
    /// asks it what to do with a request and performs the answer.
    ///
    /// Sendable through `Mutex`: every piece of mutable state lives inside it.
    final class Backend: FakeRoutes {
        struct Waiter: Sendable {
            var count: Int
            var continuation: CheckedContinuation<Bool, Never>
            /// Answers false at the deadline; cancelled when the log gets there first.
            var timer: TimerHandle
        }

        struct State: Sendable {
            var options: Options
            var ledger = Ledger()
            var log: [Request] = []
            var waiters: [UInt64: Waiter] = [:]
            var nextWaiterID: UInt64 = 0
            var observers: [@Sendable (Request) -> Void] = []
            var isShutDown = false
            /// Failed password sign-ins so far (`Options.maximumFailedSignIns`).
            var failedSignIns = 0
            var sentEmails: [FakeFirebase.SentEmail] = []
        }

        let state: Mutex<State>
        /// The fake's waits (latency, hangs, trickles, `waitForRequests`): real delays, armed on
        /// `Options.clock` (a manual clock's instants turn into the same real delays).
        let timers: SystemTimerSource
        let faults: FaultLayer

        init(options: Options) {
            state = Mutex(State(options: options))
            timers = SystemTimerSource(clock: options.clock)
            let clock = options.clock
            faults = FaultLayer(defaultTarget: Route.secureTokenPath) { clock.now() }
        }

        /// Waits `seconds` of real time; throws when the task is cancelled (its connection closed).
        func pause(_ seconds: Double) async throws {
            guard await timers.sleep(seconds: seconds, from: options.clock) else { throw CancellationError() }
        }

        /// Runs `body` under the lock. What it logs is appended to the request log, and waiters
        /// and observers hear of it once the lock is released (they may call back into the fake).
        func transact<T: Sendable>(_ body: (inout State, inout [Request]) -> T) -> T {
            let (result, logged, ready, observers) = state.withLock { state in
                var logged: [Request] = []
                let result = body(&state, &logged)
                state.log.append(contentsOf: logged)
                let count = state.log.count
                let ready = state.waiters.filter { $0.value.count <= count }
                for id in ready.keys { state.waiters.removeValue(forKey: id) }
                return (result, logged, Array(ready.values), logged.isEmpty ? [] : state.observers)
            }
            for waiter in ready {
                waiter.timer.cancel()
                waiter.continuation.resume(returning: true)
            }
            for entry in logged { for observer in observers { observer(entry) } }
            return result
        }

        // MARK: Options, faults, log

        var options: Options { state.withLock { $0.options } }

        func update(_ change: (inout Options) -> Void) {
            state.withLock { change(&$0.options) }
        }

        var requests: [Request] { state.withLock { $0.log } }

        func addObserver(_ observer: @escaping @Sendable (Request) -> Void) {
            state.withLock { $0.observers.append(observer) }
        }

        func waitForRequests(count: Int, timeout: Double) async -> Bool {
            await withCheckedContinuation { continuation in
                // Registered under the same lock that appends to the log, so no wake-up is lost.
                let registered = state.withLock { locked in
                    guard locked.log.count < count, !locked.isShutDown else { return false }
                    let id = locked.nextWaiterID
                    locked.nextWaiterID += 1
                    let timer = timers.schedule(at: locked.options.clock.now().addingTimeInterval(max(timeout, 0))) { [self] in
                        let expired = state.withLock { $0.waiters.removeValue(forKey: id) }
                        expired?.continuation.resume(returning: false)
                    }
                    locked.waiters[id] = Waiter(count: count, continuation: continuation, timer: timer)
                    return true
                }
                if !registered { continuation.resume(returning: requests.count >= count) }
            }
        }

        func cancelWaiters() {
            let waiters = state.withLock { state in
                state.isShutDown = true
                defer { state.waiters.removeAll() }
                return Array(state.waiters.values)
            }
            for waiter in waiters {
                waiter.timer.cancel()
                waiter.continuation.resume(returning: false)
            }
        }

        // MARK: Users

        /// A new user, signed in. An email already taken signs that user in again when
        /// `reuseExisting`, and answers nil otherwise.
        func createUser(email: String?, password: String?, reuseExisting: Bool = true) -> Ledger.Minted? {
            state.withLock { state in
                let now = state.options.clock.now()
                let existing = email.flatMap(state.ledger.user(withEmail:))
                if existing != nil, !reuseExisting { return nil }
                let user = existing ?? state.ledger.addUser(email: email, password: password, now: now)
                let provider = user.email == nil ? "anonymous" : "password"
                return state.ledger.signIn(uid: user.uid, provider: provider, now: now, options: state.options)
            }
        }

        func disableUser(_ uid: String) -> Bool { state.withLock { $0.ledger.disable(uid) } }
        func deleteUser(_ uid: String) -> Bool { state.withLock { $0.ledger.delete(uid) } }
        func revokeTokens(_ uid: String) -> Bool { state.withLock { $0.ledger.revokeTokens(of: uid, now: $0.options.clock.now()) } }
        func newestRefreshToken(uid: String) -> String? { state.withLock { $0.ledger.newestRefreshToken(uid: uid) } }

        // MARK: Requests

        /// What to do with a complete request, by the fake's own rules.
        func handle(_ request: IncomingRequest) -> Decision {
            switch Route(path: request.path) {
            case .control(let segments):
                return Decision(action: .reply(control(request, segments: segments)))
            case .secureToken:
                return transact { state, log in secureToken(request, fault: nil, state: &state, log: &log) }
            case .identityToolkit(let method), .identityToolkitV2(let method):
                return transact { state, log in identityToolkit(method, request, state: &state, log: &log) }
            case .unknown:
                let rejection = FirebaseRejection.http(404)
                logAnswered(request, fault: nil, status: rejection.status, errorCode: rejection.code)
                return Decision(action: .reply(.rejection(rejection)), delay: options.latency)
            }
        }

        /// The token endpoint plays its faults itself: its log names the token presented, and
        /// what `dropMidResponse` cuts is a real-looking token answer.
        func play(_ fault: FakeFault, for request: IncomingRequest) -> Decision? {
            guard Route(path: request.path) == .secureToken else { return nil }
            return transact { state, log in secureToken(request, fault: fault, state: &state, log: &log) }
        }

        func logAnswered(_ request: IncomingRequest, fault: FakeFault?, status: Int?) {
            logAnswered(request, fault: fault, status: status, errorCode: fault?.errorCode)
        }

        func logAnswered(_ request: IncomingRequest, fault: FakeFault?, status: Int?, errorCode: String?) {
            transact { state, log in
                var entry = Request(at: state.options.clock.now(), method: request.method, path: request.path)
                (entry.fault, entry.status, entry.errorCode) = (fault, status, errorCode)
                log.append(entry)
            }
        }
    }
}

/// A complete request as the connection layer hands it to a fake (and its scripted answerer).
public struct IncomingRequest: Sendable {
    public var method: String
    /// Percent-decoded path, without the query.
    public var path: String
    public var query: [String: String]
    /// Header names lowercased.
    public var headers: [String: String]
    public var body: [UInt8]

    init(method: String, target: String, headers: [String: String] = [:], body: [UInt8]) {
        self.method = method
        path = FakeResponder.path(of: target)
        query = FakeResponder.query(of: target)
        self.headers = headers
        self.body = body
    }

    /// `?key=` or else the `X-Goog-Api-Key` header, both of which Google accepts.
    var apiKey: String? { query["key"] ?? headers["x-goog-api-key"] }
    var contentType: String? { headers["content-type"] }
    /// The body as a form (`application/x-www-form-urlencoded`).
    public var form: [String: String] { FormEncoding.decode(Substring(decoding: body, as: UTF8.self)) }
    public var authorization: String? { headers["authorization"] }
}

/// What the connection layer should do, and after how long.
struct Decision: Sendable {
    enum Action: Sendable, Equatable {
        case reply(Reply)
        /// Close without answering.
        case drop
        /// Send the head and half the body of this reply, then close.
        case dropMidResponse(Reply)
        /// Never answer; leave the connection open.
        case hang
        /// Send the head, then this reply's body a byte at a time (`FakeFault.trickleInterval`).
        case trickle(Reply)
    }

    var action: Action
    /// Seconds to hold the answer back (`Options.latency`).
    var delay: Double = 0
}
