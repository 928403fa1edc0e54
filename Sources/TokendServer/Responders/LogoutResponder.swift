import TokendCore
import TokendProtocol
import TokendProviders

/// `logout`: the session is forgotten either way; `revocation` says what the provider did.
struct LogoutResponder: Sendable {
    let session: any SessionService

    func handle(_ args: LogoutArgs, id: RequestID?) async throws(TokendError) -> Response {
        let outcome = try await session.logout(account: args.account).get()
        var response = Response(id: id)
        response.account = args.account
        switch outcome.revocation {
        case .revoked: response.revocation = "revoked"
        case .unsupported(let reason):
            response.revocation = "unsupported"
            response.warning = reason
        case .failed(let failure):
            response.revocation = "failed"
            response.warning = "the provider did not revoke the session (\(failure.summary))"
        case nil: break
        }
        if outcome.supersededByNewerSession { response.keptNewerSession = true }
        return response
    }
}
