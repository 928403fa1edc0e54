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

    /// The options as `GET /_fake/options` shows them (all) and `POST` changes them (those given;
    /// the project's id and number are shown only).
    struct Options: Codable {
        var lifetime: Int?
        var rotate: Bool?
        var revoke_previous: Bool?
        var latency: Double?
        /// `Options.revokeFamilyOnReuse`.
        var revoke_family_on_reuse: Bool?
        /// TOTP second factors enabled for the project (off by default, as in production).
        var totp_enabled: Bool?
        var project_id: String?
        var project_number: String?

        init(_ options: FakeFirebase.Options) {
            (lifetime, rotate, revoke_previous, latency) = (options.lifetime, options.rotate, options.revokePrevious, options.latency)
            (totp_enabled, project_id, project_number) = (options.totpEnabled, options.projectID, options.projectNumber)
            revoke_family_on_reuse = options.revokeFamilyOnReuse
        }

        func apply(to options: inout FakeFirebase.Options) {
            (options.lifetime, options.rotate) = (lifetime ?? options.lifetime, rotate ?? options.rotate)
            (options.revokePrevious, options.latency) = (revoke_previous ?? options.revokePrevious, latency ?? options.latency)
            options.totpEnabled = totp_enabled ?? options.totpEnabled
            options.revokeFamilyOnReuse = revoke_family_on_reuse ?? options.revokeFamilyOnReuse
        }
    }

    /// A fault as `POST /_fake/faults` takes it on every fake and `GET /_fake/requests` shows it:
    /// `{"fault":"status","status":503,"retry_after":5,"count":3}`,
    /// `{"fault":"hang","route":"/identitytoolkit.googleapis.com/*","seconds":20}`.
    struct Fault: Codable, Equatable {
        var fault: String
        var status: Int?
        var retry_after: Int?
        var body: String?
        var code: String?
        var count: Int?
        var seconds: Double?
        /// Where: a path, a prefix ending in `*`, or `*`; the fake's token endpoint when absent.
        var route: String?
        var headers: [String: String]?
        /// `delay`'s seconds (`seconds` is the budget's).
        var late: Double?

        /// The faults that take no argument, by their wire name.
        static let plain: [String: FakeFault] = [
            "refuse": .refuse, "drop": .drop, "drop_mid_response": .dropMidResponse, "hang": .hang, "trickle": .trickle,
            "malformed_json": .malformedJSON, "missing_fields": .missingFields,
        ]

        init(_ fault: FakeFault) {
            self.fault = Self.plain.first { $0.value == fault }?.key ?? ""
            switch fault {
            case .status(let status, let retryAfter, let body, let headers):
                (self.fault, self.status, retry_after, self.body) = ("status", status, retryAfter, body)
                self.headers = headers.isEmpty ? nil : headers
            case .firebaseError(let code, let status): (self.fault, self.status, self.code) = ("firebase_error", status, code)
            case .oauthError(let code, let status): (self.fault, self.status, self.code) = ("oauth_error", status, code)
            case .redirect(let status, let location): (self.fault, self.status, body) = ("redirect", status, location)
            case .delay(let seconds): (self.fault, late) = ("delay", seconds)
            default: break
            }
        }

        /// The Swift fault this describes; errors name the field a script got wrong.
        func decoded() throws(ControlPlaneError) -> FakeFault {
            if let plain = Self.plain[fault] { return plain }
            switch fault {
            case "status":
                guard let status, (100...599).contains(status) else {
                    throw .badRequest("a status fault needs \"status\" between 100 and 599")
                }
                return .status(status, retryAfter: retry_after, body: body, headers: headers ?? [:])
            case "firebase_error", "oauth_error":
                guard let code, !code.isEmpty else { throw .badRequest("a \(fault) fault needs \"code\"") }
                return fault == "oauth_error" ? .oauthError(code, status: status ?? 400) : .firebaseError(code, status: status ?? 400)
            case "delay":
                guard let late, late > 0 else { throw .badRequest("a delay fault needs \"late\", positive seconds") }
                return .delay(late)
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

    /// A logged request with every token in clear (the fake is a test double): its fields in
    /// snake_case (`FakeJSON.encode(_:snakeCase:)`), times in seconds, and `rotated`.
    struct Request: Encodable {
        var request: FakeFirebase.Request

        enum Extra: String, CodingKey { case rotated }

        func encode(to encoder: any Encoder) throws {
            try request.encode(to: encoder)
            var extra = encoder.container(keyedBy: Extra.self)
            try extra.encode(request.rotated, forKey: .rotated)
        }
    }

    struct Failure: Encodable {
        var error: String
    }

    struct Done: Encodable {
        var ok = true
    }

    static let prefix = "/_fake"

    /// `/_fake` and below: the control plane, on every fake, never faulted or logged.
    static func isControl(_ path: String) -> Bool { path == prefix || path.hasPrefix(prefix + "/") }

    static func decode<T: Decodable>(_ type: T.Type, _ body: [UInt8]) throws(ControlPlaneError) -> T {
        do throws(BodyError) {
            return try FakeJSON.decode(type, from: body)
        } catch {
            throw .badRequest("the body is not the JSON this endpoint takes")
        }
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
