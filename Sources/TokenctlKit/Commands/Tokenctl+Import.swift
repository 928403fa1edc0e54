import ArgumentParser
import CTokendShims
import TokendCore
import TokendProtocol

extension Tokenctl {
    /// `tokenctl import ACCOUNT`: hands tokend a session obtained elsewhere. The token comes on
    /// stdin only — argv is world-readable in /proc and lands in shell history (docs/architecture.md, "Secrets").
    struct Import: TokenctlCommand {
        static let configuration = CommandConfiguration(
            abstract: "Store a refresh token (read from stdin) for an account, then refresh it.",
            discussion: """
                stdin holds either a bare refresh token (the first non-empty line) or a JSON \
                object with "refresh_token" and optionally "id_token", "access_token" and \
                "expires_at" (RFC 3339, or seconds since 1970). On a terminal tokenctl prompts \
                for the token without echoing it.
                """)

        @OptionGroup var target: AccountArgument
        @OptionGroup var connection: ConnectionOptions

        var account: String { target.account }

        func execute(_ context: CommandContext) throws(TokenctlError) {
            _ = tokend_set_not_dumpable()
            let console = context.console
            let limit = ImportInput.maximumLength
            let input =
                console.inputIsTerminal
                ? try console.readSecretLine(prompt: "Refresh token for \(Text.singleLine(account)): ", limit: limit)
                : try console.readInput(limit: limit)
            let session = try ImportInput.parse(input)
            let daemon = try DaemonConnection(options: connection, context: context)
            let (response, _) = try daemon.call(
                .import(ImportArgs(
                    account: account, refreshToken: session.refreshToken, idToken: session.idToken, accessToken: session.accessToken,
                    expiresAt: session.expiresAt, timeout: daemon.settings.timeout)))
            try console.write("\(Text.singleLine(account)) imported\(expiry(of: response, now: context.now()))\n")
        }
    }
}

/// What `import` read from stdin. Error messages name fields, never their values.
struct ImportInput: Equatable {
    /// The daemon refuses request lines over 64 KiB (docs/protocol.md), so larger input cannot be sent.
    static let maximumLength = LineFramer.maximumLineLength

    var refreshToken: String
    var idToken: String?
    var accessToken: String?
    var expiresAt: String?

    static let usageHint = #"pipe in a refresh token, or JSON with "refresh_token": tokenctl import ACCOUNT < FILE"#

    static func parse(_ input: [UInt8]) throws(TokenctlError) -> ImportInput {
        guard input.count <= maximumLength else {
            throw TokenctlError(.usage, "stdin holds more than \(maximumLength / 1024) KiB", next: "import one token set at a time")
        }
        guard let text = String(validating: input, as: UTF8.self) else {
            throw TokenctlError(.usage, "stdin is not UTF-8 text", next: usageHint)
        }
        let content = text.drop { $0 == "\u{FEFF}" || $0.isWhitespace }
        if content.first == "{" { return try parseJSON(Data(content.utf8)) }
        let line = content.split(whereSeparator: \.isNewline).lazy
            .map(Text.trim)
            .first { !$0.isEmpty }
        guard let line else { throw TokenctlError(.usage, "stdin held no refresh token", next: usageHint) }
        return ImportInput(refreshToken: line)
    }

    private struct TokenSetJSON: Decodable {
        var refresh_token: String?
        var id_token: String?
        var access_token: String?
        var expires_at: Expiry?
    }

    /// `expires_at` as RFC 3339 text or as seconds since 1970 (what OAuth libraries often store).
    private enum Expiry: Decodable {
        case text(String), seconds(Double)
        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let seconds = try? container.decode(Double.self) { self = .seconds(seconds) } else { self = .text(try container.decode(String.self)) }
        }
    }

    private static func parseJSON(_ data: Data) throws(TokenctlError) -> ImportInput {
        let decoded: TokenSetJSON
        do {
            decoded = try JSONDecoder().decode(TokenSetJSON.self, from: data)
        } catch let DecodingError.typeMismatch(_, context) {
            throw TokenctlError(.usage, "\"\(context.codingPath.map(\.stringValue).joined(separator: "."))\" on stdin has the wrong type", next: usageHint)
        } catch {
            throw TokenctlError(.usage, "stdin starts with { but is not one JSON object", next: usageHint)
        }
        guard let refreshToken = nonEmpty(decoded.refresh_token) else {
            throw TokenctlError(.usage, "the JSON on stdin has no \"refresh_token\"", next: usageHint)
        }
        var result = ImportInput(refreshToken: refreshToken, idToken: nonEmpty(decoded.id_token), accessToken: nonEmpty(decoded.access_token))
        switch decoded.expires_at {
        case nil: break
        case .seconds(let seconds):
            guard let date = Date.bounded(secondsSince1970: seconds) else {
                throw TokenctlError(.usage, "\"expires_at\" on stdin is not a time between 1970 and 9999", next: "write it like 2025-01-31T12:00:00Z")
            }
            result.expiresAt = Timestamp.format(date)
        case .text(let text):
            guard Timestamp.parse(text) != nil else {
                throw TokenctlError(.usage, "\"expires_at\" on stdin is not an RFC 3339 time", next: "write it like 2025-01-31T12:00:00Z")
            }
            result.expiresAt = text
        }
        return result
    }

    private static func nonEmpty(_ value: String?) -> String? {
        guard let trimmed = value.map(Text.trim), !trimmed.isEmpty else { return nil }
        return trimmed
    }
}
