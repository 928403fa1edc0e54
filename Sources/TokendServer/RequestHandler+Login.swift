import TokendCore
import TokendProtocol
import TokendProviders

extension RequestHandler {
    /// Upper bound on a login's `timeout`: half an hour covers a device code's usual life; a
    /// login left open longer only holds a loopback port for nothing.
    public static let maximumLoginTimeout: Double = 1800

    /// The `login` op: progress lines as the provider's flow goes, then one response line
    /// (`"progress":"done"` or an error). Closing the connection cancels the login.
    func login(_ request: Request) throws(TokendError) -> AsyncStream<StreamLine> {
        let name = try account(of: request)
        let login = try Self.loginRequest(from: request)
        return loginStream(id: request.id, account: name) { [engine] progress in
            await engine.login(account: name, login, progress: progress)
        }
    }

    /// A sign-in's streamed reply: each step as a progress line, then the outcome's response.
    func loginStream(
        id: RequestID?, account name: String,
        _ run: @escaping @Sendable (_ progress: @escaping @Sendable (LoginStep) -> Void) async -> Result<LoginSummary, TokendError>
    ) -> AsyncStream<StreamLine> {
        let (stream, continuation) = AsyncStream<StreamLine>.makeStream()
        let task = Task { [self] in
            let result = await run { step in
                if let line = Self.progressLine(step, id: id, account: name) { continuation.yield(.progress(line)) }
            }
            continuation.yield(.response(loginResponse(result, id: id, account: name)))
            continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }

    func loginResponse(_ result: Result<LoginSummary, TokendError>, id: RequestID?, account name: String) -> Response {
        switch result {
        case .failure(let error):
            return .failure(error, id: id)
        case .success(let summary):
            var response = Response(id: id)
            fill(&response, account: name, expiresAt: summary.expiresAt)
            response.progress = "done"
            response.signInProvider = summary.signInProvider
            return response
        }
    }

    /// The `login` request's fields, checked: every missing or contradictory one named.
    static func loginRequest(from request: Request) throws(TokendError) -> LoginRequest {
        guard let methodName = request.method else {
            let names = LoginRequest.Method.allCases.map(\.rawValue).joined(separator: ", ")
            throw TokendError(.badRequest, "field \"method\" is required for op login (one of: \(names))")
        }
        guard let method = LoginRequest.Method(rawValue: methodName) else {
            let names = LoginRequest.Method.allCases.map(\.rawValue).joined(separator: ", ")
            throw TokendError(.badRequest, "field \"method\" must be one of: \(names)")
        }
        let timeout = try loginTimeout(request.timeout)
        let email = request.email?.trimmed
        if request.create == true, method != .email {
            throw TokendError(.badRequest, "field \"create\" only goes with method email")
        }
        switch method {
        case .email:
            guard let email, !email.isEmpty else { throw TokendError(.badRequest, "field \"email\" is required for method email") }
            guard request.secret?.isEmpty == false else {
                throw TokendError(.badRequest, "field \"secret\" (the password) is required for method email")
            }
        case .customToken:
            guard let secret = request.secret?.trimmed, !secret.isEmpty else {
                throw TokendError(.badRequest, "field \"secret\" (the custom token) is required for method custom_token")
            }
        case .browser, .device, .anonymous, .google:
            break
        }
        let secret = method == .customToken ? request.secret?.trimmed : request.secret
        return LoginRequest(
            method: method, email: email, create: request.create ?? false, secret: secret, scopes: request.scopes, timeout: timeout)
    }

    /// How long a sign-in may take: `timeout`, else five minutes.
    static func loginTimeout(_ value: Double?) throws(TokendError) -> Double {
        guard let value else { return LoginRequest.defaultTimeout }
        guard value.isFinite, value >= 1, value <= maximumLoginTimeout else {
            throw TokendError(.badRequest, "field \"timeout\" must be a number of seconds from 1 to \(Int(maximumLoginTimeout))")
        }
        return value
    }

    /// A provider's step as a progress line (`done` is the response line instead).
    static func progressLine(_ step: LoginStep, id: RequestID?, account: String) -> LoginProgress? {
        switch step {
        case .openURL(let url):
            var line = LoginProgress(id: id, progress: .openURL, account: account)
            line.url = url
            return line
        case .userCode(let uri, let complete, let code, let expiresIn):
            var line = LoginProgress(id: id, progress: .userCode, account: account)
            line.verificationURI = uri
            line.verificationURIComplete = complete
            line.userCode = code
            line.expiresIn = expiresIn.map { Int($0) }
            return line
        case .waiting(let message):
            var line = LoginProgress(id: id, progress: .waiting, account: account)
            line.message = message
            return line
        case .done:
            return nil
        }
    }
}
