import Foundation
import TokendProviders

/// The Secure Token API's body, in either encoding it accepts: the JS SDK and REST callers send
/// a form, the iOS SDK sends camelCase JSON, and snake_case JSON works too (docs/architecture.md, "Provider facts").
struct TokenRequestBody: Sendable, Equatable {
    var grantType: String?
    var refreshToken: String?

    private struct JSONBody: Decodable {
        var grantType: String?
        var grantTypeSnake: String?
        var refreshToken: String?
        var refreshTokenSnake: String?

        enum CodingKeys: String, CodingKey {
            case grantType
            case grantTypeSnake = "grant_type"
            case refreshToken
            case refreshTokenSnake = "refresh_token"
        }
    }

    init(_ request: IncomingRequest) throws(BodyError) {
        if Self.isJSON(request) {
            let json = try FakeJSON.decode(JSONBody.self, from: request.body)
            grantType = json.grantType ?? json.grantTypeSnake
            refreshToken = json.refreshToken ?? json.refreshTokenSnake
        } else {
            let form = FormEncoding.decode(Substring(decoding: request.body, as: UTF8.self))
            grantType = form["grant_type"]
            refreshToken = form["refresh_token"]
        }
    }

    /// JSON when the client says so, or when it says nothing and the body starts like an object.
    private static func isJSON(_ request: IncomingRequest) -> Bool {
        if let type = request.contentType?.lowercased() {
            if type.contains("json") { return true }
            if type.contains("x-www-form-urlencoded") { return false }
        }
        let firstByte = request.body.first { !($0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D) }
        return firstByte == UInt8(ascii: "{")
    }
}

/// A successful refresh, with production's snake_case names and string `expires_in`.
struct SecureTokenResponse: Encodable {
    var access_token: String
    var expires_in: String
    var id_token: String
    var project_id: String
    var refresh_token: String
    var token_type = "Bearer"
    var user_id: String
}

extension FakeFirebase.Options {
    /// Google's frontend checks the key before the service sees the request: missing → 403,
    /// listed as invalid → 400 `API_KEY_INVALID`, anything else passes (like the emulator).
    func rejectAPIKey(_ key: String?, service: String, rpc: String? = nil) -> FirebaseRejection? {
        guard let key, !key.isEmpty else { return .missingAPIKey }
        if let restriction = restrictedAPIKeys[key] { return .apiKeyBlocked(restriction, service: service, rpc: rpc, projectNumber: projectNumber) }
        return invalidAPIKeys.contains(key) ? .apiKeyInvalid(service: service) : nil
    }
}

extension FakeFirebase.Backend {
    static let secureTokenService = "securetoken.googleapis.com"

    /// `POST /securetoken.googleapis.com/v1/token`: a fault if one was chosen, else the real rules.
    func secureToken(
        _ request: IncomingRequest, fault: FakeFirebase.Fault?, state: inout State, log: inout [FakeFirebase.Request]
    ) -> Decision {
        let options = state.options
        let now = options.clock.now()
        let body = Result { () throws(BodyError) in try TokenRequestBody(request) }
        var entry = FakeFirebase.Request(at: now, method: request.method, path: request.path)
        entry.grantType = try? body.get().grantType
        entry.presentedRefreshToken = try? body.get().refreshToken
        entry.uid = entry.presentedRefreshToken.flatMap(state.ledger.uid(of:))

        if let fault {
            var partial = ["token_type": "Bearer", "project_id": options.projectNumber]
            (partial["refresh_token"], partial["user_id"]) = (entry.presentedRefreshToken, entry.uid)
            let wouldBe = Self.wouldBeAnswer(presented: entry.presentedRefreshToken, uid: entry.uid, options: options, now: now)
            let action = fault.action(wouldBe: wouldBe, partial: partial)
            entry.fault = fault
            if fault.answersCompletely, case .reply(let reply) = action { entry.status = reply.status }
            entry.errorCode = fault.errorCode
            log.append(entry)
            return Decision(action: action, delay: options.latency)
        }

        let outcome = refreshOutcome(request, body: body, now: now, state: &state)
        let reply: Reply
        switch outcome {
        case .success(let minted):
            entry.issuedRefreshToken = minted.refreshToken
            entry.issuedIDToken = minted.idToken
            entry.issuedExpiresAt = minted.expiresAt
            reply = .json(200, SecureTokenResponse(
                access_token: minted.idToken, expires_in: String(minted.lifetime), id_token: minted.idToken,
                project_id: options.projectNumber, refresh_token: minted.refreshToken, user_id: minted.uid))
        case .failure(let rejection):
            entry.errorCode = rejection.code
            reply = .rejection(rejection)
        }
        entry.status = reply.status
        log.append(entry)
        return Decision(action: .reply(reply), delay: options.latency)
    }

    /// Checks in the order Google's stack does: method, key, body, grant type, refresh token.
    private func refreshOutcome(
        _ request: IncomingRequest, body: Result<TokenRequestBody, BodyError>, now: Date, state: inout State
    ) -> Result<Ledger.Minted, FirebaseRejection> {
        guard request.method == "POST" else { return .failure(.http(404)) }
        if let rejection = state.options.rejectAPIKey(request.apiKey, service: Self.secureTokenService) {
            return .failure(rejection)
        }
        guard let body = try? body.get() else { return .failure(.invalidJSONPayload) }
        guard let grantType = body.grantType, !grantType.isEmpty else { return .failure(.firebase("MISSING_GRANT_TYPE")) }
        guard grantType == "refresh_token" else { return .failure(.firebase("INVALID_GRANT_TYPE")) }
        guard let refreshToken = body.refreshToken, !refreshToken.isEmpty else {
            return .failure(.firebase("MISSING_REFRESH_TOKEN"))
        }
        return state.ledger.refresh(refreshToken, now: now, options: state.options)
    }
}

extension FirebaseRejection {
    /// What Google answers a body that does not parse as the JSON it announced.
    static let invalidJSONPayload = FirebaseRejection(
        status: 400, message: "Invalid JSON payload received.", legacyReason: "invalid", code: "INVALID_JSON_PAYLOAD")
}
