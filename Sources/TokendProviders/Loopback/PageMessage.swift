import TokendCore

/// The hosted page's error message (the SDK's `AuthError.message`) as tokenctl may show it: it
/// comes from a browser page and may quote a server's answer, which can hold a credential
/// (`INVALID_CREDENTIAL_OR_PROVIDER_ID` quotes `id_token=…`), so it is cleaned before it goes
/// anywhere (docs/security.md, "The hosted sign-in page").
enum PageMessage {
    /// Longer than any AADSTS explanation with its trace and correlation ids (~400 characters),
    /// short enough for one stderr line.
    static let maximumLength = 600
    /// A run of token characters this long is a credential (a JWT, a refresh token, a code), not
    /// a word; a GUID (36) or a tenant's domain stays readable.
    static let credentialRun = 40
    /// Query or form fields whose value is a credential, whatever its length.
    static let secretFields = ["token", "code", "secret", "assertion", "password", "nonce", "key"]

    /// The SDK's error code as the page sent it (`auth/popup-closed-by-user`), kept only when it
    /// looks like one: it goes into a message. The SDK hyphenates a server message it does not
    /// know into a code (`auth/requests-from-referer-http://localhost:8080/-are-blocked.`), so
    /// printable ASCII without spaces or quotes passes, 200 characters at most (a referrer's worth).
    static func code(_ code: String?) -> String {
        guard let code, !code.isEmpty, code.count <= 200,
            code.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7f && !"\"'\\`".unicodeScalars.contains($0) })
        else {
            return "failed"
        }
        return code
    }

    /// Control characters (and the line separators) dropped, credentials replaced by `[redacted]`,
    /// at most `maximumLength` characters; nil for nothing left.
    static func clean(_ message: String?) -> String? {
        guard let message else { return nil }
        var text = String(String.UnicodeScalarView(message.unicodeScalars.prefix(4 * maximumLength).filter {
            !($0.properties.generalCategory == .control || $0.properties.generalCategory == .format || $0 == "\u{2028}" || $0 == "\u{2029}")
        }))
        text = redactFields(text)
        text = redactRuns(text)
        if text.count > maximumLength { text = String(text.prefix(maximumLength)) + "…" }
        let trimmed = text.trimmed
        return trimmed.isEmpty ? nil : trimmed
    }

    /// Whether `scalar` belongs to a token: base64url and JWT characters, `+` and `=` of base64.
    /// Not `/`, so that a URL's path falls into words.
    static func isTokenCharacter(_ scalar: Unicode.Scalar) -> Bool {
        scalar.isASCII && (Character(scalar).isLetter || Character(scalar).isNumber || "-_.+=".unicodeScalars.contains(scalar))
    }

    /// `…token=VALUE`, `code=VALUE`, …: the value up to the next `&`, space or quote replaced.
    static func redactFields(_ text: String) -> String {
        var out = ""
        var rest = Substring(text)
        while let equals = rest.firstIndex(of: "=") {
            let before = rest[..<equals]
            let nameStart = before.lastIndex { !($0.isLetter || $0 == "_") }.map { before.index(after: $0) } ?? before.startIndex
            let name = before[nameStart...].lowercased()
            out += rest[...equals]
            rest = rest[rest.index(after: equals)...]
            if secretFields.contains(where: { name.hasSuffix($0) }) {
                let end = rest.firstIndex { "& \"',}".contains($0) } ?? rest.endIndex
                if end != rest.startIndex { out += "[redacted]" }
                rest = rest[end...]
            }
        }
        return out + rest
    }

    /// Every run of at least `credentialRun` token characters replaced.
    static func redactRuns(_ text: String) -> String {
        var out = String.UnicodeScalarView()
        var run = String.UnicodeScalarView()
        func flush() {
            if run.count >= credentialRun { out.append(contentsOf: "[redacted]".unicodeScalars) } else { out.append(contentsOf: run) }
            run = String.UnicodeScalarView()
        }
        for scalar in text.unicodeScalars {
            if isTokenCharacter(scalar) { run.append(scalar) } else { flush(); out.append(scalar) }
        }
        flush()
        return String(out)
    }
}
