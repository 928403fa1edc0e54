import TokendCore
import TokendProtocol
import TokendProviders

/// `login`: progress lines as the provider's flow goes, then one response line
/// (`"progress":"done"` or an error). Closing the connection cancels the login.
struct LoginResponder: Sendable {
    let signIn: any SignInService

    func handle(_ args: LoginArgs, id: RequestID?) -> RequestRouter.Reply {
        let name = args.account
        let request = LoginRequest(args)
        return .stream(SignInStream.make(id: id, account: name, clock: signIn.clock) { [signIn] progress in
            await signIn.login(account: name, request: request, progress: progress)
        })
    }
}

/// A sign-in's streamed reply (`login`, `account` `upgrade` with Google): each step as a progress
/// line, then the outcome's response line.
enum SignInStream {
    static func make(
        id: RequestID?, account name: String, clock: any WallClock,
        _ run: @escaping @Sendable (_ progress: @escaping @Sendable (LoginStep) -> Void) async -> Result<LoginSummary, TokendError>
    ) -> AsyncStream<RequestRouter.StreamLine> {
        let (stream, continuation) = AsyncStream<RequestRouter.StreamLine>.makeStream()
        let task = Task {
            let result = await run { step in
                if let line = progressLine(step, id: id, account: name) { continuation.yield(.progress(line)) }
            }
            continuation.yield(.response(response(result, id: id, account: name, now: clock.now())))
            continuation.finish()
        }
        // The client went away: stop the sign-in, which frees the account for the next one.
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }

    /// The line that ends the stream.
    static func response(_ result: Result<LoginSummary, TokendError>, id: RequestID?, account name: String, now: Date) -> Response {
        switch result {
        case .failure(let error):
            return .failure(error, id: id)
        case .success(let summary):
            var response = Response(id: id)
            response.describeSession(account: name, expiresAt: summary.expiresAt, now: now)
            response.progress = "done"
            response.signInProvider = summary.signInProvider
            response.replacedOtherUser = summary.replacedOtherUser ? true : nil
            return response
        }
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
            line.expiresIn = expiresIn.map { Int(saturating: $0) }
            return line
        case .waiting(let message):
            var line = LoginProgress(id: id, progress: .waiting, account: account)
            line.message = message
            return line
        case .secondFactor(let challenge):
            var line = LoginProgress(id: id, progress: .secondFactor, account: account)
            line.factors = challenge.factors
            line.factor = challenge.chosen
            line.handle = challenge.handle
            return line
        case .done:
            return nil
        }
    }
}
