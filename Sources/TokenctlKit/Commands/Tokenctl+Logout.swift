import ArgumentParser
import TokendCore
import TokendProtocol

extension Tokenctl {
    /// `tokenctl logout ACCOUNT`: the daemon forgets the session, keyring included.
    struct Logout: TokenctlCommand {
        static let configuration = CommandConfiguration(
            abstract: "Forget an account's tokens, keyring item included, revoking them at the provider where it can.")

        @OptionGroup var target: AccountArgument
        @OptionGroup var connection: ConnectionOptions

        var account: String { target.account }

        func execute(_ context: CommandContext) throws(TokenctlError) {
            let daemon = try DaemonConnection(options: connection, context: context)
            let (response, _) = try daemon.call(.logout(LogoutArgs(account: account)))
            let revoked = response.revocation == "revoked" ? "; the session was revoked at the provider" : ""
            if response.keptNewerSession == true {
                // The user's newer command won: say so rather than claim the account is out.
                try context.console.write(
                    "\(Text.singleLine(account)): the old session was logged out\(revoked), but an import or login issued meanwhile signed it in again; see tokenctl status \(Text.singleLine(account))\n")
                return
            }
            try context.console.write("\(Text.singleLine(account)) logged out\(revoked)\n")
            if response.revocation == "failed", let warning = response.warning {
                // The local session is gone either way; the user may want to revoke it by hand.
                context.console.writeError("tokenctl: warning: \(Text.singleLine(warning)); revoke it in the provider's account settings if it matters\n")
            }
        }
    }
}
