import TokendCore
import TokendProtocol

/// `import`: stores the session, then answers like `refresh` with the first refresh's outcome.
struct ImportResponder: Sendable {
    let session: any SessionService

    func handle(_ args: ImportArgs, id: RequestID?) async throws(TokendError) -> Response {
        let expiresAt = try await session.install(account: args.account, tokens: args.tokens, timeout: args.timeout).get()
        var response = Response(id: id)
        response.describeSession(account: args.account, expiresAt: expiresAt, now: session.clock.now())
        return response
    }
}
