import ArgumentParser
import CTokendShims
import TokendCore
import TokendProtocol

extension Tokenctl {
    /// `tokenctl git-credential get|store|erase`: git's credential-helper protocol. The account
    /// whose `git_hosts` claims the repository answers `get`; for any other host the helper
    /// prints nothing, and git asks its next helper.
    struct GitCredential: TokenctlCommand {
        static let configuration = CommandConfiguration(
            commandName: "git-credential",
            abstract: "git's credential helper: answers with the token of the account whose git_hosts claims the host.",
            discussion: """
                Set it up with: git config --global credential.https://HOST.helper '!tokenctl git-credential'. \
                Claims with a path (github.com/my-org) need git config credential.useHttpPath true. \
                store and erase do nothing: tokend owns the session.
                """)

        enum Operation: String, ExpressibleByArgument, CaseIterable { case get, store, erase }

        @Argument(help: "What git asks: get, store or erase.")
        var operation: Operation

        @OptionGroup var connection: ConnectionOptions

        /// git's requests are a few short lines; 64 KiB matches the daemon's own line cap.
        static let inputLimit = 64 * 1024

        func execute(_ context: CommandContext) throws(TokenctlError) {
            // git writes the request before reading the answer: take it all, whatever the operation.
            let input = try context.console.readInput(limit: Self.inputLimit)
            guard operation == .get else { return }  // tokend's session is not git's to store or erase
            _ = tokend_set_not_dumpable()
            let request = Self.parse(input)
            // https, or http where a claim says so for a loopback host (GitHostClaim).
            guard let scheme = request["protocol"], ["https", "http"].contains(scheme), let host = request["host"], !host.isEmpty else { return }
            let accounts = try DaemonConnection.accounts(connection.settings, context)
            let claims = accounts.map { (account: $0.name, hosts: $0.gitHosts ?? []) }
            guard let account = GitHostClaim.bestAccount(protocol: scheme, host: host, path: request["path"], claims: claims),
                let status = accounts.first(where: { $0.name == account })
            else { return }
            let grant = try DaemonConnection.token(of: account, connection.settings, context)
            let username = status.gitUsername ?? JWTClaims(token: grant.token)?.email ?? "oauth2"
            var answer = "username=\(Self.value(username))\npassword=\(grant.token)\n"
            if let expiry = grant.expiresAt.flatMap(Timestamp.parse) {
                // git 2.41+ drops the password once this passes instead of retrying a dead one.
                answer += "password_expiry_utc=\(Int(saturating: expiry.timeIntervalSince1970))\n"
            }
            try context.console.write(answer)
        }

        /// git's `key=value` lines up to a blank line; later keys win, `key[]` lists are skipped.
        static func parse(_ input: [UInt8]) -> [String: String] {
            var fields: [String: String] = [:]
            for line in String(decoding: input, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false) {
                if line.isEmpty { break }
                guard let equals = line.firstIndex(of: "=") else { continue }
                fields[String(line[..<equals])] = String(line[line.index(after: equals)...])
            }
            return fields
        }

        /// A value git can read back: one line, no NUL.
        static func value(_ text: String) -> String {
            String(text.unicodeScalars.filter { $0 != "\n" && $0 != "\0" }.map(Character.init))
        }
    }
}
