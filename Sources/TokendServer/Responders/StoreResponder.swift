import TokendCore
import TokendProtocol

/// `store` `move`: the account's status once its session is where it was asked to be (its
/// `store` names it), and a `warning` when the old copy could not be removed yet.
struct StoreResponder: Sendable {
    let stores: any StoreService
    let status: any StatusService

    func handle(_ args: StoreArgs, id: RequestID?) async throws(TokendError) -> Response {
        let outcome = try await stores.moveStore(account: args.account, to: args.to).get()
        var response = Response(id: id)
        response.account = args.account
        response.accounts = try await status.statuses(account: args.account).get().map(AccountStatus.init)
        if !outcome.moved { response.warning = "already in \(outcome.to.rawValue)" }
        if let leftover = outcome.leftover { response.warning = leftover }
        return response
    }
}
