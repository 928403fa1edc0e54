import TokendCore
import TokendFleet

extension AccountEngine {
    /// What another member of the fleet did to a shared account's session: a new session is
    /// held from now on as an import would be (no refresh, no revocation, nothing sent anywhere);
    /// a logout forgets it here too.
    public func followFleet(_ name: String, _ change: FleetChange) async {
        guard let account = accounts[name] else { return }
        switch change {
        case .put(let tokens):
            // A refresh in flight here is the fleet's (FleetMember.refresh): it answers with this
            // session itself, so an import's or a `tokenctl refresh`'s wait ends in success.
            guard account.tokens != tokens, !account.isRefreshing else { return }
            _ = await commitSession(name, tokens, committing: nil)
            logger.info("session taken from the fleet", metadata: ["account": "\(name)"])
        case .deleted:
            guard account.tokens != nil else { return }
            _ = await forgetSession(name, committing: nil, reason: FleetError.loggedOutElsewhere(name))
            logger.info("session forgotten: logged out on another member of the fleet", metadata: ["account": "\(name)"])
        }
    }
}
