import ArgumentParser
import TokendCore
import TokendProtocol

extension Tokenctl {
    /// `tokenctl status [ACCOUNT]`: a table for humans, or the daemon's own JSON for scripts.
    struct Status: TokenctlCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show every account's (or one account's) state, expiry, last refresh and last error.",
            discussion: """
                --json prints the daemon's `accounts` array as it sent it (fields it adds later \
                included), pretty-printed with sorted keys; `jq -c` makes it one line.
                """)

        @OptionGroup var filter: AccountFilter
        @Flag(help: "Print the accounts as JSON instead of a table.")
        var json = false
        @OptionGroup var connection: ConnectionOptions

        var account: String? { filter.account }

        func execute(_ context: CommandContext) throws(TokenctlError) {
            let daemon = try DaemonConnection(options: connection, context: context)
            let (response, line) = try daemon.call(.status(StatusArgs(account: account)))
            guard let accounts = response.accounts else { throw .protocolMismatch("a status reply without accounts") }
            if json {
                try context.console.write(try Self.accountsJSON(line) + "\n")
            } else {
                let width = context.console.outputIsTerminal ? context.console.outputColumns : nil
                try context.console.write(StatusTable.render(accounts, now: context.now(), width: width))
            }
        }

        /// The reply's `accounts` value re-encoded untouched by our own types, so a newer
        /// daemon's extra fields survive.
        static func accountsJSON(_ line: [UInt8]) throws(TokenctlError) -> String {
            do {
                guard case .object(let reply) = try JSONDecoder().decode(AnyJSON.self, from: Data(line)),
                    let accounts = reply["accounts"]
                else { throw TokenctlError.protocolMismatch("a status reply without accounts") }
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
                return String(decoding: try encoder.encode(accounts), as: UTF8.self)
            } catch let error as TokenctlError {
                throw error
            } catch {
                throw .protocolMismatch("a status reply this tokenctl cannot read")
            }
        }
    }
}

/// The human status table. Columns are padded to their widest cell; on a terminal each line is
/// cut to its width, so the long last column never wraps the table apart.
enum StatusTable {
    static let header = ["ACCOUNT", "PROVIDER", "STATE", "EXPIRES IN", "LAST REFRESH", "STORE", "KEYRING", "LAST ERROR/MESSAGE"]
    /// Two spaces between columns: one reads as a word break inside a cell.
    static let gap = "  "

    static func render(_ accounts: [AccountStatus], now: Date, width: Int?) -> String {
        if accounts.isEmpty { return "No accounts are configured.\n" }
        let rows = [header] + accounts.map { row(for: $0, now: now) }
        var widths = [Int](repeating: 0, count: header.count)
        for row in rows {
            for (column, cell) in row.enumerated() { widths[column] = max(widths[column], cell.count) }
        }
        return rows.map { row in
            var line = row.enumerated().map { column, cell in
                column == row.count - 1 ? cell : Text.padded(cell, to: widths[column])
            }.joined(separator: gap)
            if let width { line = Text.truncate(line, to: width) }
            return line + "\n"
        }.joined()
    }

    static func row(for account: AccountStatus, now: Date) -> [String] {
        var left = account.expiresIn
        if left == nil, let expiresAt = account.expiresAt.flatMap(Timestamp.parse) {
            left = Int(saturating: expiresAt.timeIntervalSince(now).rounded(.down))
        }
        let keyring = account.keyring + (account.unsaved == true ? " (unsaved)" : "")
        var notes: [String] = []
        if let message = account.message, !message.isEmpty { notes.append(message) }
        if let error = account.lastError { notes.append(error.summary) }
        if let note = account.storeNote { notes.append(note) }
        return [
            account.name, account.provider, account.state, Text.expiresIn(left), Text.ago(account.lastRefresh, now: now),
            (account.store ?? "-") + (account.storeNote == nil ? "" : " (moved)"), keyring, notes.isEmpty ? "-" : notes.joined(separator: "; "),
        ].map(Text.singleLine)
    }
}
