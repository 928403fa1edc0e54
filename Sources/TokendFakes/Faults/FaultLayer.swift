import Foundation
import Synchronization

/// The layer every fake shares in front of its routes (the fake Firebase, the fake OIDC provider,
/// the stand-ins): faults aimed at any of its routes, a scripted answerer that takes over any
/// request, and the log of every request that reached the fake. Played by the one connection
/// layer (`FakeResponder`) over loopback and in-process alike; driven over HTTP by
/// `POST`/`DELETE /_fake/faults` on every fake.
public final class FaultLayer: Sendable {
    /// Answers a request in the fake's place (nil: the fake answers): a hostile provider.
    public typealias Answerer = @Sendable (IncomingRequest) -> Reply?

    struct State: Sendable {
        var schedule = FaultSchedule()
        var answerer: Answerer?
        var log: [IncomingRequest] = []
    }

    private let state = Mutex(State())
    /// The route a fault goes to when none is named: the fake's token endpoint, where refreshes go.
    let defaultTarget: String
    let now: @Sendable () -> Date

    init(defaultTarget: String, now: @escaping @Sendable () -> Date = { Date() }) {
        self.defaultTarget = defaultTarget
        self.now = now
    }

    /// The next `count` requests to `route` (a path, a prefix ending in `*`, or `*` for any; the
    /// token endpoint when nil) get `fault`. Injections queue up in order.
    public func inject(_ fault: FakeFault, count: Int = 1, on route: String? = nil) {
        add(fault, .requests(count), route)
    }

    /// Every request to `route` in the next `forSeconds` seconds gets `fault`, once the injections
    /// queued before it are used up or expired.
    public func inject(_ fault: FakeFault, forSeconds: Double, on route: String? = nil) {
        add(fault, .seconds(forSeconds), route)
    }

    func add(_ fault: FakeFault, _ budget: FaultSchedule.Budget, _ route: String?, late: Double = 0) {
        let target = FaultSchedule.Target(pattern: route ?? defaultTarget)
        let instant = now()
        state.withLock { $0.schedule.add(fault, budget: budget, target: target, late: late, now: instant) }
    }

    /// Forgets every injected fault and the answerer.
    public func clear() {
        state.withLock { ($0.schedule, $0.answerer) = (FaultSchedule(), nil) }
    }

    /// Every request that reached the fake, in order, faulted or not (a `refuse`d one without its
    /// body); the control plane's are not listed.
    public var requests: [IncomingRequest] { state.withLock { $0.log } }

    func record(_ request: IncomingRequest) {
        guard !ControlWire.isControl(request.path) else { return }
        state.withLock { $0.log.append(request) }
    }

    /// Every request `answerer` answers (any route) gets that answer instead of the fake's.
    public func answer(with answerer: @escaping Answerer) {
        state.withLock { $0.answerer = answerer }
    }

    /// The fault for a request to `path`, decided at its head (so that `refuse` acts before the
    /// body is read). The control plane never takes one: a script can always clear a fault.
    func take(for path: String) -> FaultSchedule.Entry? {
        guard !ControlWire.isControl(path) else { return nil }
        let instant = now()
        return state.withLock { $0.schedule.take(for: path, at: instant) }
    }

    func scriptedAnswer(to request: IncomingRequest) -> Reply? {
        guard !ControlWire.isControl(request.path), let answerer = state.withLock({ $0.answerer }) else { return nil }
        return answerer(request)
    }

    /// `POST /_fake/faults` (a `ControlWire.Fault`, `route` naming where) and `DELETE /_fake/faults`.
    func control(_ request: IncomingRequest) -> Reply {
        do throws(ControlPlaneError) {
            switch request.method {
            case "DELETE":
                clear()
            case "POST":
                let spec = try ControlWire.decode(ControlWire.Fault.self, request.body)
                add(try spec.decoded(), try spec.budget(), spec.route)
            default:
                throw .methodNotAllowed
            }
            return .json(200, ControlWire.Done())
        } catch {
            return .json(error.status, ControlWire.Failure(error: error.message))
        }
    }
}
