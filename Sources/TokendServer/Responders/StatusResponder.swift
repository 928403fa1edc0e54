import TokendCore
import TokendProtocol

/// `list` and `status`: every account's state, or one's. Never a secret.
struct StatusResponder: Sendable {
    let status: any StatusService

    func handle(_ args: StatusArgs, id: RequestID?) async throws(TokendError) -> Response {
        var response = Response(id: id)
        response.accounts = try await status.statuses(account: args.account).get().map(AccountStatus.init)
        return response
    }
}
