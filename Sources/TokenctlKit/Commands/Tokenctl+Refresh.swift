import ArgumentParser
import TokendCore
import TokendProtocol

extension Tokenctl {
    /// `tokenctl refresh ACCOUNT`: a refresh now, whatever the schedule says.
    struct Refresh: TokenctlCommand {
        static let configuration = CommandConfiguration(abstract: "Refresh an account's tokens now.")

        @OptionGroup var target: AccountArgument
        @OptionGroup var connection: ConnectionOptions

        var account: String { target.account }

        func execute(_ context: CommandContext) throws(TokenctlError) {
            let daemon = try DaemonConnection(options: connection, context: context)
            let (response, _) = try daemon.call(.refresh(RefreshArgs(account: account, timeout: daemon.settings.timeout)))
            try context.console.write("\(Text.singleLine(account)) refreshed\(expiry(of: response, now: context.now()))\n")
        }
    }
}

/// ", expires at 2025-01-01T12:00:00Z (in 59m 59s)" for a reply carrying an expiry, else "".
func expiry(of response: Response, now: Date) -> String {
    guard let expiresAt = response.expiresAt else { return "" }
    let left = response.expiresIn ?? Timestamp.parse(expiresAt).map { Int(saturating: $0.timeIntervalSince(now).rounded(.down)) }
    let when = left.map { $0 > 0 ? " (in \(Text.duration($0)))" : " (expired)" } ?? ""
    return ", expires at \(Text.singleLine(expiresAt))\(when)"
}
