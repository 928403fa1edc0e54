// Responders/ — one responder per op: it takes a decoded `Command`, calls a Commands/ service, and
// returns the reply (a `Response`) without touching the socket.

import TokendCore
import TokendProtocol

/// `token`: a bearer token that meets `min_valid`, or the error that says why there is none.
struct TokenResponder: Sendable {
    let session: any SessionService

    func handle(_ args: TokenArgs, id: RequestID?) async throws(TokendError) -> Response {
        let grant = try await session.token(account: args.account, kind: args.kind, scope: args.narrowing, minValid: args.minValid, timeout: args.timeout).get()
        return Self.response(grant, account: args.account, id: id, now: session.clock.now())
    }

    /// The answer that hands out `grant`, however it was found.
    static func response(_ grant: TokenGrant, account: String, id: RequestID?, now: Date) -> Response {
        var response = Response(id: id)
        response.describeSession(account: account, expiresAt: grant.expiresAt, now: now)
        response.token = grant.token
        response.kind = grant.kind
        return response
    }

    /// The answer from a token already held (`SessionService.heldToken`), or nil if the request
    /// needs the engine: a narrowed token, or none held that meets `min_valid`.
    static func answerAtOnce(_ args: TokenArgs, id: RequestID?, session: any SessionService) -> Response? {
        guard args.narrowing == nil, let grant = session.heldToken(account: args.account, kind: args.kind, minValid: args.minValid) else { return nil }
        return response(grant, account: args.account, id: id, now: session.clock.now())
    }
}
