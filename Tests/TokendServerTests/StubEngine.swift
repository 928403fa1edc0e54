import Foundation
import Synchronization
import Testing
import TokendCore
import TokendProtocol
import TokendProviders
@testable import TokendServer
import TokendTestSupport

/// The engine as the handlers see it, answering what a test scripts and recording every call:
/// handler tests run with no provider, keyring or HTTP server.
final class StubEngine: EngineServices {
    /// One call to the engine, with the arguments the handler passed (never a test's guess).
    enum Call: Equatable, Sendable {
        case token(account: String, kind: TokenKind?, minValid: Double, timeout: Double, scope: TokenScope?)
        case refresh(account: String, timeout: Double)
        case install(account: String, tokens: TokenSet, timeout: Double)
        case logout(account: String)
        case statuses(account: String?)
        case accountNames
        case login(account: String, method: LoginRequest.Method, email: String?, create: Bool, secret: String?, timeout: Double)
        case upgradeWithIdentityProvider(account: String, id: String, device: Bool, timeout: Double)
        case showUser(account: String, timeout: Double)
        case sendVerificationEmail(account: String, timeout: Double)
        case sendPasswordReset(account: String, email: String?)
        case upgrade(account: String, email: String, password: String, timeout: Double)
        case describeDeletion(account: String)
        case deleteUser(account: String, timeout: Double)
        case startSecondFactorEnrollment(account: String, timeout: Double)
        case finishSecondFactorEnrollment(account: String, handle: String, code: String, displayName: String?, timeout: Double)
        case removeSecondFactor(account: String, factor: String, timeout: Double)
    }

    /// What the engine answers; every failure defaults to one no test expects by accident.
    struct Script: Sendable {
        static let unscripted = TokendError(.internal, "the test did not script this call")
        var token: Result<TokenGrant, TokendError> = .failure(unscripted)
        /// What the event loop's fast path finds held (nil: it asks `token`).
        var held: TokenGrant?
        var expiry: Result<Date?, TokendError> = .failure(unscripted)
        var logout: Result<LogoutOutcome, TokendError> = .failure(unscripted)
        var statuses: Result<[AccountReport], TokendError> = .failure(unscripted)
        var accountNames: [String] = []
        var loginSteps: [LoginStep] = []
        var signIn: Result<LoginSummary, TokendError> = .failure(unscripted)
        var user: Result<ManagedUser, TokendError> = .failure(unscripted)
        var email: Result<String, TokendError> = .failure(unscripted)
        var deletion: Result<Void, TokendError> = .failure(unscripted)
        var enrollment: Result<SecondFactorEnrollment, TokendError> = .failure(unscripted)
        var deletionDescription = "this deletes Firebase user u1 for good"
        /// A sign-in that, after its steps, waits for the user until it is cancelled.
        var signInWaitsForTheUser = false

        /// Every call fails with `error`.
        static func failing(_ error: TokendError) -> Script {
            var script = Script()
            script.token = .failure(error)
            script.expiry = .failure(error)
            script.logout = .failure(error)
            script.statuses = .failure(error)
            script.signIn = .failure(error)
            script.user = .failure(error)
            script.email = .failure(error)
            script.deletion = .failure(error)
            return script
        }
    }

    let clock: any WallClock
    private let state: Mutex<(script: Script, calls: [Call], cancelledSignIns: Int)>

    init(_ script: Script = Script(), clock: any WallClock = ManualClock()) {
        self.clock = clock
        state = Mutex((script, [], 0))
    }

    var calls: [Call] { state.withLock { $0.calls } }
    /// Sign-ins that were waiting for the user when their task was cancelled.
    var cancelledSignIns: Int { state.withLock { $0.cancelledSignIns } }

    /// Relays `steps`, then waits for the user when the script says so (until cancelled).
    private func signIn(_ steps: [LoginStep], _ result: Result<LoginSummary, TokendError>, progress: @Sendable (LoginStep) -> Void) async -> Result<LoginSummary, TokendError> {
        for step in steps { progress(step) }
        guard state.withLock({ $0.script.signInWaitsForTheUser }) else { return result }
        // Ends at once when the task is cancelled; an hour is only "never" for a test.
        try? await Task.sleep(for: .seconds(3600))
        state.withLock { $0.cancelledSignIns += 1 }
        return .failure(TokendError(.unavailable, "the sign-in was cancelled"))
    }

    private func record<Value>(_ call: Call, _ answer: (Script) -> Value) -> Value {
        state.withLock { state in
            state.calls.append(call)
            return answer(state.script)
        }
    }

    func token(account: String, kind: TokenKind?, scope: TokenScope?, minValid: Double, timeout: Double) async -> Result<TokenGrant, TokendError> {
        record(.token(account: account, kind: kind, minValid: minValid, timeout: timeout, scope: scope)) { $0.token }
    }

    /// Not a recorded call: the fast path is a read, and `calls` lists what reached the engine.
    func heldToken(account: String, kind: TokenKind?, minValid: Double) -> TokenGrant? {
        state.withLock { $0.script.held }
    }

    func refresh(account: String, timeout: Double) async -> Result<Date?, TokendError> {
        record(.refresh(account: account, timeout: timeout)) { $0.expiry }
    }

    func install(account: String, tokens: TokenSet, timeout: Double) async -> Result<Date?, TokendError> {
        record(.install(account: account, tokens: tokens, timeout: timeout)) { $0.expiry }
    }

    func logout(account: String) async -> Result<LogoutOutcome, TokendError> {
        record(.logout(account: account)) { $0.logout }
    }

    /// No store behind the stub: the router's tests of `store` run against the real engine.
    func moveStore(account: String, to store: StoreKind) async -> Result<StoreMoveOutcome, TokendError> {
        .failure(TokendError(.unsupportedOp, "the stub engine keeps no stores"))
    }

    func statuses(account: String?) async -> Result<[AccountReport], TokendError> {
        record(.statuses(account: account)) { $0.statuses }
    }

    var accountNames: [String] {
        get async { record(.accountNames) { $0.accountNames } }
    }

    func login(account: String, request: LoginRequest, progress: @escaping @Sendable (LoginStep) -> Void) async -> Result<LoginSummary, TokendError> {
        let call = Call.login(
            account: account, method: request.method, email: request.email, create: request.create, secret: request.secret, timeout: request.timeout)
        let (steps, result) = record(call) { ($0.loginSteps, $0.signIn) }
        return await signIn(steps, result, progress: progress)
    }

    func upgradeWithIdentityProvider(
        account: String, _ identityProvider: String, device: Bool, timeout: Double, progress: @escaping @Sendable (LoginStep) -> Void
    ) async -> Result<LoginSummary, TokendError> {
        let call = Call.upgradeWithIdentityProvider(account: account, id: identityProvider, device: device, timeout: timeout)
        let (steps, result) = record(call) { ($0.loginSteps, $0.signIn) }
        return await signIn(steps, result, progress: progress)
    }

    func showUser(account: String, timeout: Double) async -> Result<(ManagedUser, FirebaseClaims?), TokendError> {
        record(.showUser(account: account, timeout: timeout)) { $0.user.map { ($0, nil) } }
    }

    func sendVerificationEmail(account: String, timeout: Double) async -> Result<String, TokendError> {
        record(.sendVerificationEmail(account: account, timeout: timeout)) { $0.email }
    }

    func sendPasswordReset(account: String, email: String?) async -> Result<String, TokendError> {
        record(.sendPasswordReset(account: account, email: email)) { $0.email }
    }

    func upgrade(account: String, email: String, password: String, timeout: Double) async -> Result<LoginSummary, TokendError> {
        record(.upgrade(account: account, email: email, password: password, timeout: timeout)) { $0.signIn }
    }

    func describeDeletion(account: String) async -> Result<String, TokendError> {
        record(.describeDeletion(account: account)) { .success($0.deletionDescription) }
    }

    func deleteUser(account: String, timeout: Double) async -> Result<Void, TokendError> {
        record(.deleteUser(account: account, timeout: timeout)) { $0.deletion }
    }

    func startSecondFactorEnrollment(account: String, timeout: Double) async -> Result<SecondFactorEnrollment, TokendError> {
        record(.startSecondFactorEnrollment(account: account, timeout: timeout)) { $0.enrollment }
    }

    func finishSecondFactorEnrollment(account: String, handle: String, code: String, displayName: String?, timeout: Double) async -> Result<LoginSummary, TokendError> {
        record(.finishSecondFactorEnrollment(account: account, handle: handle, code: code, displayName: displayName, timeout: timeout)) { $0.signIn }
    }

    func removeSecondFactor(account: String, factor: String, timeout: Double) async -> Result<LoginSummary, TokendError> {
        record(.removeSecondFactor(account: account, factor: factor, timeout: timeout)) { $0.signIn }
    }
}

/// A request handler on a stub engine, driven by raw lines as a client sends them.
struct StubbedHandler {
    let engine: StubEngine
    let hub = EventHub()
    var handler: RequestRouter { RequestRouter(services: engine, hub: hub, version: "test") }

    init(_ script: StubEngine.Script = .init()) {
        engine = StubEngine(script)
    }

    /// The reply to one line (a newline is not part of it: the framer strips it).
    func reply(_ bytes: [UInt8]) async -> RequestRouter.Reply {
        await handler.handle(line: bytes)
    }

    /// The single response to `line`; a recorded issue if the reply is a stream.
    func respond(_ line: String, sourceLocation: SourceLocation = #_sourceLocation) async -> Response {
        await respond(bytes: Array(line.utf8), sourceLocation: sourceLocation)
    }

    func respond(bytes: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) async -> Response {
        guard case .response(let response) = await reply(bytes) else {
            Issue.record("a stream where a single response was expected", sourceLocation: sourceLocation)
            return Response.failure(TokendError(.internal, "streamed"))
        }
        return response
    }

    /// Every line of a streamed reply, to its end.
    func stream(_ line: String, sourceLocation: SourceLocation = #_sourceLocation) async -> [RequestRouter.StreamLine] {
        guard case .stream(let stream) = await reply(Array(line.utf8)) else {
            Issue.record("a single response where a stream was expected", sourceLocation: sourceLocation)
            return []
        }
        var lines: [RequestRouter.StreamLine] = []
        for await line in stream { lines.append(line) }
        return lines
    }
}
