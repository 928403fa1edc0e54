import TokendCore
import TokendProtocol

/// `token`: a bearer token that meets `min_valid`, or the error that says why there is none.
struct TokenHandler: Sendable {
    let session: any SessionService

    func handle(_ args: TokenArgs, id: RequestID?) async throws(TokendError) -> Response {
        let grant = try await session.token(
            account: args.account, kind: args.kind, minValid: args.minValid, timeout: args.timeout, scope: args.scope
        ).get()
        var response = Response(id: id)
        response.describeSession(account: args.account, expiresAt: grant.expiresAt, now: session.clock.now())
        response.token = grant.token
        response.kind = grant.kind
        return response
    }
}
