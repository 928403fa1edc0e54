import Foundation
import NIOHTTP1

/// An HTTP answer a fake decided on, before the connection layer writes it (or half of it).
public struct Reply: Sendable, Equatable {
    public var status: Int
    public var contentType: String
    public var extraHeaders: [String: String] = [:]
    public var body: [UInt8]

    init(status: Int, contentType: String, extraHeaders: [String: String] = [:], body: [UInt8]) {
        (self.status, self.contentType, self.extraHeaders, self.body) = (status, contentType, extraHeaders, body)
    }

    /// A body as written, labelled JSON (what a scripted or hostile answer says).
    public init(status: Int = 200, body: String, headers: [String: String] = [:]) {
        self.init(status: status, contentType: "application/json", extraHeaders: headers, body: Array(body.utf8))
    }

    /// A JSON object of mixed values (a scripted OAuth answer), keys sorted.
    public static func object(_ status: Int = 200, _ object: [String: any Sendable]) -> Reply {
        Reply(status: status, body: String(decoding: (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data(), as: UTF8.self))
    }

    /// Google's APIs answer `application/json; charset=UTF-8`; clients must accept the parameter.
    static let jsonContentType = "application/json; charset=UTF-8"

    static func json(_ status: Int, _ value: some Encodable) -> Reply {
        Reply(status: status, contentType: jsonContentType, body: Array(FakeJSON.encode(value)))
    }

    static func rejection(_ rejection: FirebaseRejection) -> Reply {
        json(rejection.status, GoogleErrorEnvelope(rejection))
    }

    /// RFC 6749 §5.2, what a generic OAuth server (or Google's own oauth2 endpoint) answers.
    static func oauthError(_ code: String, status: Int) -> Reply {
        json(status, ["error": code, "error_description": OAuthErrorText.description(for: code)])
    }

    static func text(_ status: Int, _ text: String, contentType: String = "text/plain; charset=UTF-8") -> Reply {
        Reply(status: status, contentType: contentType, body: Array(text.utf8))
    }
}

/// A refusal in Google's terms: the HTTP status, the canonical status name, and `message`, which
/// for Firebase is `CODE` or `CODE : detail` (docs/architecture.md, "Provider facts").
struct FirebaseRejection: Error, Sendable, Equatable {
    var status: Int
    var message: String
    /// `errors[0].reason` in Google's legacy list.
    var legacyReason: String
    /// `details[0].reason` (`google.rpc.ErrorInfo`), where Google sends one.
    var errorInfoReason: String?
    /// `details[0].metadata.service`.
    var service: String?
    /// `details[0].metadata.consumer` (`projects/NUMBER`), where production names the key's project.
    var consumer: String? = nil

    /// A short code for the request log (never sent): the Firebase code, the ErrorInfo reason,
    /// or the status name.
    var code: String

    /// A Firebase error (`TOKEN_EXPIRED`, `WEAK_PASSWORD : …`), 400 unless told otherwise.
    static func firebase(_ message: String, status: Int = 400) -> FirebaseRejection {
        // The code a client extracts: `message` up to the first colon, trimmed (docs/architecture.md, "Provider facts").
        let code = String(message.split(separator: ":", maxSplits: 1).first ?? "").trimmingCharacters(in: .whitespaces)
        return FirebaseRejection(status: status, message: message, legacyReason: "invalid", code: code)
    }

    /// A key listed in `Options.invalidAPIKeys`: 400 with reason `API_KEY_INVALID`.
    static func apiKeyInvalid(service: String) -> FirebaseRejection {
        FirebaseRejection(
            status: 400, message: "API key not valid. Please pass a valid API key.", legacyReason: "badRequest",
            errorInfoReason: "API_KEY_INVALID", service: service, code: "API_KEY_INVALID")
    }

    /// A key whose restriction (or project) refuses the call: 403 `PERMISSION_DENIED` with
    /// Google's wording and the `ErrorInfo.reason` (djerik/dagen-ha#14 quotes a whole referrer
    /// refusal from `accounts:signInWithPassword`; the rest, FakeFirebase+IdentityToolkit.swift's
    /// table). `rpc` is the method production names in an API restriction's text.
    static func apiKeyBlocked(_ restriction: FakeFirebase.APIKeyRestriction, service: String, rpc: String? = nil, projectNumber: String) -> FirebaseRejection {
        let message: String
        switch restriction {
        case .httpReferrer: message = "Requests from referer <empty> are blocked."
        case .ipAddress: message = "The provided API key has an IP address restriction. The originating IP address of the call (127.0.0.1) violates this restriction."
        // firebase-ios-sdk#1941: "Requests to this API identitytoolkit method google.firebase.auth.v1.
        // IdentityIdaasAuthenticationService.SignInWithIdp are blocked."; other methods' names are not recorded.
        case .service:
            let short = service.split(separator: ".").first.map(String.init) ?? service
            message = rpc.map { "Requests to this API \(short) method \($0) are blocked." } ?? "Requests to this API \(service) are blocked."
        case .androidApp: message = "Requests from this Android client application <empty> are blocked."
        case .iosApp: message = "Requests from this ios client application <empty> are blocked."
        case .serviceDisabled:
            let title = service == "securetoken.googleapis.com" ? "Token Service API" : "Identity Toolkit API"
            message = "\(title) has not been used in project \(projectNumber) before or it is disabled. Enable it by visiting https://console.developers.google.com/apis/api/\(service)/overview?project=\(projectNumber) then retry. If you enabled this API recently, wait a few minutes for the action to propagate to our systems and retry."
        }
        return FirebaseRejection(
            status: 403, message: message, legacyReason: "forbidden", errorInfoReason: restriction.rawValue, service: service,
            consumer: "projects/\(projectNumber)", code: restriction.rawValue)
    }

    /// No `key` parameter at all: Google's frontend answers 403 before the service sees it.
    static let missingAPIKey = FirebaseRejection(
        status: 403,
        message: "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.",
        legacyReason: "forbidden", code: "PERMISSION_DENIED")

    /// A plain HTTP failure with Google's wording for the status.
    static func http(_ status: Int) -> FirebaseRejection {
        FirebaseRejection(
            status: status, message: HTTPResponseStatus(statusCode: status).reasonPhrase,
            legacyReason: GoogleStatus.name(for: status).lowercased(), code: GoogleStatus.name(for: status))
    }
}

/// `{"error":{"code":…,"message":…,"errors":[…],"status":…,"details":[…]}}`.
struct GoogleErrorEnvelope: Encodable {
    struct Body: Encodable {
        var code: Int
        var message: String
        var errors: [LegacyError]
        var status: String
        var details: [ErrorInfo]?
    }

    struct LegacyError: Encodable {
        var message: String
        var domain = "global"
        var reason: String
    }

    struct ErrorInfo: Encodable {
        var type = "type.googleapis.com/google.rpc.ErrorInfo"
        var reason: String
        var domain = "googleapis.com"
        var metadata: [String: String]?

        enum CodingKeys: String, CodingKey {
            case type = "@type"
            case reason, domain, metadata
        }
    }

    var error: Body

    init(_ rejection: FirebaseRejection) {
        let details = rejection.errorInfoReason.map { reason in
            [ErrorInfo(reason: reason, metadata: rejection.service.map { service in ["service": service].merging(rejection.consumer.map { ["consumer": $0] } ?? [:]) { $1 } })]
        }
        error = Body(
            code: rejection.status, message: rejection.message,
            errors: [LegacyError(message: rejection.message, reason: rejection.legacyReason)],
            status: GoogleStatus.name(for: rejection.status), details: details)
    }
}

/// google.rpc.Code names as Google's HTTP mapping uses them.
enum GoogleStatus {
    static func name(for httpStatus: Int) -> String {
        switch httpStatus {
        case 400: "INVALID_ARGUMENT"
        case 401: "UNAUTHENTICATED"
        case 403: "PERMISSION_DENIED"
        case 404: "NOT_FOUND"
        case 409: "ALREADY_EXISTS"
        case 429: "RESOURCE_EXHAUSTED"
        case 499: "CANCELLED"
        case 500: "INTERNAL"
        case 501: "UNIMPLEMENTED"
        case 503: "UNAVAILABLE"
        case 504, 408: "DEADLINE_EXCEEDED"
        default: "UNKNOWN"
        }
    }
}

/// RFC 6749 §5.2 descriptions, worded like the servers tests imitate.
enum OAuthErrorText {
    static func description(for code: String) -> String {
        switch code {
        case "invalid_grant": "Token has been expired or revoked."
        case "invalid_client": "The OAuth client was not found."
        case "temporarily_unavailable": "The service is temporarily unavailable."
        case "server_error": "Internal server error."
        default: "Injected by FakeFirebase."
        }
    }
}

extension FakeFirebase {
    /// An API key restriction (or the key's project) that refuses tokend's requests (Google
    /// Cloud console, APIs & Services, Credentials): tokend sends no `Referer`, runs from any
    /// address and is no Android or iOS app, and a key limited to other APIs lacks the Identity
    /// Toolkit or Token Service API. Raw values are production's `ErrorInfo.reason`s
    /// (googleapis `google/api/error_reason.proto`).
    public enum APIKeyRestriction: String, Sendable, Equatable, CaseIterable {
        case httpReferrer = "API_KEY_HTTP_REFERRER_BLOCKED"
        case ipAddress = "API_KEY_IP_ADDRESS_BLOCKED"
        case service = "API_KEY_SERVICE_BLOCKED"
        case androidApp = "API_KEY_ANDROID_APP_BLOCKED"
        case iosApp = "API_KEY_IOS_APP_BLOCKED"
        /// The API is off in the key's project.
        case serviceDisabled = "SERVICE_DISABLED"
    }
}

extension Result where Failure == FirebaseRejection {
    /// A failed result's refusal, to answer with after `guard case .success = … else`; a success
    /// has none (an internal error, never sent).
    var rejection: FirebaseRejection { if case .failure(let rejection) = self { rejection } else { .http(500) } }
}
