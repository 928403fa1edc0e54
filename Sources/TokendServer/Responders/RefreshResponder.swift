import TokendCore
import TokendProtocol

/// `refresh`: a refresh now (or the one in flight), answered when it is done.
struct RefreshResponder: Sendable {
    let session: any SessionService

    func handle(_ args: RefreshArgs, id: RequestID?) async throws(TokendError) -> Response {
        let expiresAt = try await session.refresh(account: args.account, timeout: args.timeout).get()
        var response = Response(id: id)
        response.describeSession(account: args.account, expiresAt: expiresAt, now: session.clock.now())
        return response
    }
}
