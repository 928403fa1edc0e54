import Foundation

/// The control plane's JSON shapes (snake_case, for shell scripts with curl and jq).
enum ControlWire {
    struct NewUser: Decodable {
        var email: String?
        var password: String?
    }

    struct Session: Encodable {
        var uid: String
        var refresh_token: String
        var id_token: String
        /// Seconds, a number: this is the fake's own API, not Firebase's string-typed one.
        var expires_in: Int
        var expires_at: Int
    }

    struct RefreshToken: Encodable {
        var uid: String
        var refresh_token: String
    }

    struct OptionsChange: Decodable {
        var lifetime: Int?
        var rotate: Bool?
        var revoke_previous: Bool?
        var latency: Double?
        /// TOTP second factors enabled for the project (off by default, as in production).
        var totp_enabled: Bool?
    }

    struct Options: Encodable {
        var lifetime: Int
        var rotate: Bool
        var revoke_previous: Bool
        var latency: Double
        var project_id: String
        var project_number: String
        var totp_enabled: Bool

        init(_ options: FakeFirebase.Options) {
            lifetime = options.lifetime
            rotate = options.rotate
            revoke_previous = options.revokePrevious
            latency = options.latency
            project_id = options.projectID
            project_number = options.projectNumber
            totp_enabled = options.totpEnabled
        }
    }

    /// A fault as `POST /_fake/faults` takes it and `GET /_fake/requests` shows it:
    /// `{"fault":"status","status":503,"retry_after":5,"count":3}`,
    /// `{"fault":"firebase_error","code":"TOKEN_EXPIRED","seconds":20}`.
    struct Fault: Codable, Equatable {
        var fault: String
        var status: Int?
        var retry_after: Int?
        var body: String?
        var code: String?
        var count: Int?
        var seconds: Double?

        init(_ fault: FakeFirebase.Fault) {
            switch fault {
            case .status(let status, let retryAfter, let body):
                self.init(kind: "status", status: status, retry_after: retryAfter, body: body)
            case .firebaseError(let code, let status):
                self.init(kind: "firebase_error", status: status, code: code)
            case .oauthError(let code, let status):
                self.init(kind: "oauth_error", status: status, code: code)
            case .refuse: self.init(kind: "refuse")
            case .drop: self.init(kind: "drop")
            case .dropMidResponse: self.init(kind: "drop_mid_response")
            case .hang: self.init(kind: "hang")
            case .malformedJSON: self.init(kind: "malformed_json")
            case .missingFields: self.init(kind: "missing_fields")
            case .trickle: self.init(kind: "trickle")
            case .redirect(let status, let location): self.init(kind: "redirect", status: status, body: location)
            }
        }

        private init(kind: String, status: Int? = nil, retry_after: Int? = nil, body: String? = nil, code: String? = nil) {
            self.fault = kind
            self.status = status
            self.retry_after = retry_after
            self.body = body
            self.code = code
        }

        /// The Swift fault this describes; errors name the field a script got wrong.
        func decoded() throws(ControlPlaneError) -> FakeFirebase.Fault {
            switch fault {
            case "status":
                guard let status, (100...599).contains(status) else {
                    throw .badRequest("a status fault needs \"status\" between 100 and 599")
                }
                return .status(status, retryAfter: retry_after, body: body)
            case "firebase_error":
                guard let code, !code.isEmpty else { throw .badRequest("a firebase_error fault needs \"code\"") }
                return .firebaseError(code, status: status ?? 400)
            case "oauth_error":
                guard let code, !code.isEmpty else { throw .badRequest("an oauth_error fault needs \"code\"") }
                return .oauthError(code, status: status ?? 400)
            case "refuse": return .refuse
            case "drop": return .drop
            case "drop_mid_response": return .dropMidResponse
            case "hang": return .hang
            case "malformed_json": return .malformedJSON
            case "missing_fields": return .missingFields
            case "trickle": return .trickle
            case "redirect":
                guard let status, (300...399).contains(status), let body, !body.isEmpty else {
                    throw .badRequest("a redirect fault needs \"status\" 3xx and the Location in \"body\"")
                }
                return .redirect(status, location: body)
            default: throw .badRequest("unknown fault \"\(fault)\"")
            }
        }

        /// `count` or `seconds`; neither means one request, both is a mistake.
        func budget() throws(ControlPlaneError) -> FaultSchedule.Budget {
            switch (count, seconds) {
            case (nil, nil): return .requests(1)
            case (let count?, nil):
                guard count > 0 else { throw .badRequest("\"count\" must be positive") }
                return .requests(count)
            case (nil, let seconds?):
                guard seconds > 0 else { throw .badRequest("\"seconds\" must be positive") }
                return .seconds(seconds)
            case (_?, _?): throw .badRequest("give \"count\" or \"seconds\", not both")
            }
        }
    }

    /// A logged request with every token in clear: the fake is a test double.
    struct Request: Encodable {
        var at: Double
        var method: String
        var path: String
        var uid: String?
        var grant_type: String?
        var presented_refresh_token: String?
        var status: Int?
        var error_code: String?
        var issued_refresh_token: String?
        var issued_id_token: String?
        var issued_expires_at: Double?
        var rotated: Bool
        var fault: Fault?

        init(_ request: FakeFirebase.Request) {
            at = request.at.timeIntervalSince1970
            method = request.method
            path = request.path
            uid = request.uid
            grant_type = request.grantType
            presented_refresh_token = request.presentedRefreshToken
            status = request.status
            error_code = request.errorCode
            issued_refresh_token = request.issuedRefreshToken
            issued_id_token = request.issuedIDToken
            issued_expires_at = request.issuedExpiresAt?.timeIntervalSince1970
            rotated = request.rotated
            fault = request.fault.map(Fault.init)
        }
    }

    struct Failure: Encodable {
        var error: String
    }

    struct Done: Encodable {
        var ok = true
    }
}

/// A control request the fake cannot carry out, with the HTTP status that says why.
struct ControlPlaneError: Error, Equatable {
    var status: Int
    var message: String

    static func badRequest(_ message: String) -> ControlPlaneError { ControlPlaneError(status: 400, message: message) }
    static func notFound(_ message: String) -> ControlPlaneError { ControlPlaneError(status: 404, message: message) }
    static let methodNotAllowed = ControlPlaneError(status: 405, message: "method not allowed here")
}
