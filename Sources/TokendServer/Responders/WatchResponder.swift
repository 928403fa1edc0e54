import TokendCore
import TokendProtocol

/// `watch`: a first line naming what is watched, then the accounts' events as they happen.
struct WatchResponder: Sendable {
    let status: any StatusService
    let hub: EventHub
    /// A consumer's policy: only its accounts are listed, and only their events (and those about
    /// no account) are sent, as the policy stands when each happens.
    var gate: ConsumerGate? = nil

    func handle(_ args: WatchArgs, id: RequestID?) async throws(TokendError) -> RequestRouter.Reply {
        var response = Response(id: id)
        if let name = args.account {
            // An unknown account is refused now, not watched in silence.
            _ = try await status.statuses(account: name).get()
            response.watching = [name]
        } else {
            // A refused configuration is refused here too (it has no accounts to watch).
            _ = try await status.statuses(account: nil).get()
            response.watching = await status.accountNames
        }
        if let gate { response = gate.visible(response) }
        let profile = args.profile
        var visible: (@Sendable (String) -> Bool)?
        if let gate { visible = { @Sendable name in gate.sees(name) } }
        return .stream(hub.subscribe(account: args.account, first: .response(response), visible: visible) { .event($0.forWatcher(profile: profile)) })
    }
}
