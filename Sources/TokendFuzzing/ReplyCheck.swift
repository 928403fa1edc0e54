import TokendCore
import TokendProtocol
import TokendServer

/// The invariants every reply must meet, whatever the request line was (docs/fuzzing.md).
struct ReplyCheck {
    /// The error codes of docs/protocol.md; nothing else may reach a client.
    static let pinnedCodes: Set<String> = [
        "bad_request", "too_large", "unsupported_op", "unknown_account", "needs_login", "unavailable",
        "keyring_locked", "keyring_unavailable", "config_error", "internal",
    ]
    /// JSON escapes a byte as at most six (`\u001f`), and no reply adds more than a status table
    /// of the two fuzz accounts: a reply bigger than this grew from something other than the line.
    static let fixedReplyAllowance = 16 * 1024

    let line: [UInt8]
    /// Nil when the line did not decode as a request.
    let request: RequestFields?
    let response: Response
    let secrets: [SecretLedger.Secret]

    func verify() {
        let encoded = WireCoding.encodeLine(response)
        let what = "op \(request.map { String(($0.string(.op) ?? "").prefix(32)) } ?? "-"), reply \(response)"
        // One line: the terminator and no other newline (JSON escapes those inside strings).
        invariant(encoded.last == UInt8(ascii: "\n"), "a reply without its newline: \(what)")
        invariant(encoded.dropLast().firstIndex(of: UInt8(ascii: "\n")) == nil, "a reply of two lines: \(what)")
        invariant(encoded.count <= 6 * line.count + Self.fixedReplyAllowance, "a reply of \(encoded.count) bytes to a line of \(line.count): \(what)")
        let shape: AnyJSON
        do {
            shape = try JSONDecoder().decode(AnyJSON.self, from: Data(encoded.dropLast()))
        } catch {
            invariantBroken("a reply that is not JSON (\(error)): \(what)")
        }
        guard case .object(let fields) = shape, case .bool(let ok)? = fields["ok"] else {
            invariantBroken("a reply that is not an object with a boolean \"ok\": \(what)")
        }
        invariant(ok == response.ok, "\"ok\" does not say what the reply says: \(what)")
        // The client must read back what the daemon meant: the shared types round-trip.
        invariant((try? JSONDecoder().decode(Response.self, from: Data(encoded.dropLast()))) == response, "a reply that does not decode to itself: \(what)")

        if let error = response.error {
            invariant(!ok, "an error on a successful reply: \(what)")
            invariant(Self.pinnedCodes.contains(error.code.rawValue), "an unpinned error code: \(what)")
            // `internal` means a bug in tokend (docs/protocol.md): no input may provoke one.
            invariant(error.code != .internal, "an internal error: \(what)")
            invariant(!error.message.isEmpty, "an error without a message: \(what)")
        } else {
            invariant(ok, "a failed reply without an error: \(what)")
        }
        guard let request else {
            invariant(response.error?.code == .badRequest, "an undecodable line answered otherwise than bad_request: \(what)")
            return
        }
        invariant(response.id == request.id, "the id was not echoed: \(what)")
        let op = Op(rawValue: request.string(.op) ?? "")
        if op == nil {
            invariant(response.error?.code == .unsupportedOp, "an unknown op answered otherwise than unsupported_op: \(what)")
        }
        if op == .login {
            // The fuzzer's stub provider has no sign-in flow: a login can never succeed.
            invariant(!ok, "a login against a provider without sign-in succeeded: \(what)")
        }
        if ok, op == .token {
            invariant(response.token.map { !$0.isEmpty } == true && response.kind != nil, "a token reply without a token: \(what)")
            // Served with at least `min_valid` left; whole seconds, and a moment passes before
            // `expires_in` is computed.
            let minValid = request.number(.minValid) ?? TokenArgs.defaultMinValid
            invariant(Double(response.expiresIn ?? -1) >= minValid - 5, "a token that does not live min_valid: \(what)")
        }
        // No secret the daemon holds leaves it, except a bearer token asked for by `token`.
        guard encoded.firstRange(of: SecretLedger.marker.utf8) != nil else { return }
        for secret in secrets where encoded.firstRange(of: secret.value.utf8) != nil && line.firstRange(of: secret.value.utf8) == nil {
            invariant(ok && op == .token && secret.kind == .bearer, "a reply leaked a held secret: \(what)")
        }
    }
}
