import ArgumentParser
import TokendCore
import TokendProtocol
import TokendSystem

/// Account names for shell completion, asked of the running daemon (`tokenctl list`). Silent
/// when it is not running: a completion must never print an error into the command line.
enum AccountCompletion {
    /// How long a completion may wait for the daemon: a user pressing Tab will not wait longer.
    static let timeout = 1.0

    @Sendable static func names(_ words: [String], _ index: Int, _ prefix: String) -> [String] {
        var options = ConnectionOptions()
        options.socket = socketOption(in: words)
        options.timeoutOption = timeout
        let context = CommandContext(console: SystemConsole(), environment: Environment.process())
        guard let daemon = try? DaemonConnection(options: options, context: context),
            let (response, _) = try? daemon.call(.list(StatusArgs()))
        else { return [] }
        return (response.accounts ?? []).map(\.name).filter { $0.hasPrefix(prefix) }
    }

    /// A `--socket` already typed on the command line, so completion asks the same daemon.
    static func socketOption(in words: [String]) -> String? {
        for (index, word) in words.enumerated() {
            if word.hasPrefix("--socket=") { return String(word.dropFirst("--socket=".count)) }
            if word == "--socket", index + 1 < words.count { return words[index + 1] }
        }
        return nil
    }
}
