import TokendCore
import TokendProtocol

/// Google's executable-sourced credentials: google-auth runs `credential_source.executable`'s
/// command and reads one JSON object from its stdout, version 1 (google-auth's "executable
/// response format": `success`, `token_type`, `id_token`, `expiration_time` in Unix seconds; a
/// failure is `success: false` with `code` and `message`, and a non-zero exit). tokend is the
/// cache, so `output_file` is never written: a token goes to no file (README, "Google Cloud").
enum GoogleExecutableResponse {
    static let version = 1
    /// The subject token types an OIDC or Firebase ID token can be presented as; google-auth
    /// passes the configured one in GOOGLE_EXTERNAL_ACCOUNT_TOKEN_TYPE.
    static let idTokenType = "urn:ietf:params:oauth:token-type:id_token"
    static let jwtType = "urn:ietf:params:oauth:token-type:jwt"

    static func answer(_ options: TokenOptions, _ context: CommandContext) throws(TokenctlError) {
        do {
            let tokenType = try tokenType(asked: context.environment["GOOGLE_EXTERNAL_ACCOUNT_TOKEN_TYPE"])
            try context.console.write(render(try options.fetch(context), tokenType: tokenType) + "\n")
        } catch {
            // google-auth reads the failure from stdout; the shell still gets the exit code and
            // the stderr line.
            try? context.console.write(render(failure: error) + "\n")
            throw error
        }
    }

    /// The type the configuration asked for, when tokend can serve it; an ID token when it
    /// asked for none (a manual run).
    static func tokenType(asked: String?) throws(TokenctlError) -> String {
        guard let asked, !asked.isEmpty else { return idTokenType }
        guard asked == idTokenType || asked == jwtType else {
            throw TokenctlError(
                .usage, "the credential configuration asks for a \(Text.singleLine(asked)) subject token; tokend serves OIDC tokens",
                next: "set subject_token_type to \(idTokenType) or \(jwtType)")
        }
        return asked
    }

    static func render(_ grant: TokenGrant, tokenType: String) -> String {
        struct Success: Encodable {
            var version = GoogleExecutableResponse.version
            var success = true
            var tokenType: String
            var idToken: String
            /// Required by google-auth only with an `output_file`, but always known here.
            var expirationTime: Int?

            enum CodingKeys: String, CodingKey {
                case version, success, tokenType = "token_type", idToken = "id_token", expirationTime = "expiration_time"
            }
        }
        let expiry = grant.expiresAt.flatMap(Timestamp.parse).map { Int(saturating: $0.timeIntervalSince1970) }
        return Text.jsonObject(Success(tokenType: tokenType, idToken: grant.token, expirationTime: expiry))
    }

    static func render(failure: TokenctlError) -> String {
        struct Failure: Encodable {
            var version = GoogleExecutableResponse.version
            var success = false
            var code: String
            var message: String
        }
        return Text.jsonObject(Failure(code: failure.code.name, message: String(failure.line.dropFirst("tokenctl: ".count))))
    }
}

extension TokenctlError.Code {
    /// A word for the code, for formats that carry one (Google's executable response).
    var name: String {
        switch self {
        case .usage: "usage"
        case .unknownAccount: "unknown_account"
        case .notReachable: "not_reachable"
        case .temporary: "temporary"
        case .needsLogin: "needs_login"
        case .configuration: "configuration"
        case .forbidden: "forbidden"
        case .outputClosed: "output_closed"
        case .failure: "failure"
        }
    }
}
