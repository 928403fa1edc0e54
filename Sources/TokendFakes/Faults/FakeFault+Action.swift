import Foundation

extension FakeFault {
    /// What the connection layer does for this fault on any route. `wouldBe` is the full-size
    /// answer that `dropMidResponse` cuts and `trickle` drips (made without touching the fake's
    /// state), `partial` the 200 answer `missingFields` sends.
    func action(wouldBe: Reply = .genericAnswer, partial: [String: String] = ["token_type": "Bearer"]) -> Decision.Action {
        switch self {
        case .status(let status, let retryAfter, let body, let headers):
            var reply = body.map { text in
                // A custom body is sent as written; JSON-looking text is labelled JSON, the rest
                // HTML, which is what Google's frontends serve for 502s and the like.
                Reply.text(status, text, contentType: text.first == "{" || text.first == "[" ? Reply.jsonContentType : "text/html; charset=UTF-8")
            } ?? .rejection(.http(status))
            reply.extraHeaders.merge(headers) { $1 }
            if let retryAfter { reply.extraHeaders["Retry-After"] = String(retryAfter) }
            return .reply(reply)
        case .firebaseError(let message, let status):
            return .reply(.rejection(.firebase(message, status: status)))
        case .oauthError(let code, let status):
            return .reply(.oauthError(code, status: status))
        case .refuse, .drop:
            // `refuse` is normally acted on at the request's head; should one reach here, not
            // answering at all is the closest behaviour.
            return .drop
        case .hang:
            return .hang
        case .dropMidResponse:
            return .dropMidResponse(wouldBe)
        case .trickle:
            return .trickle(wouldBe)
        case .delay:
            // Played by the connection layer, which answers as usual, late.
            return .reply(wouldBe)
        case .redirect(let status, let location):
            var reply = Reply.text(status, "", contentType: "text/html; charset=UTF-8")
            reply.extraHeaders["Location"] = location
            return .reply(reply)
        case .malformedJSON:
            return .reply(.text(
                200, "<!DOCTYPE html><html><head><title>Network login</title></head><body>Sign in to continue</body></html>",
                contentType: Reply.jsonContentType))
        case .missingFields:
            return .reply(.json(200, partial))
        }
    }

    /// The log's `errorCode` for faults that answer with one.
    var errorCode: String? {
        switch self {
        case .firebaseError(let message, _): FirebaseRejection.firebase(message).code
        case .oauthError(let code, _): code
        default: nil
        }
    }
}

extension Reply {
    /// What `dropMidResponse` and `trickle` send on a route that has no answer of its own to cut:
    /// a token answer's size (a KiB), so a trickle outlasts any client deadline.
    static let genericAnswer = Reply.json(200, ["access_token": String(repeating: "x", count: 1024), "token_type": "Bearer"])
}

extension FakeFirebase.Backend {
    /// The token endpoint's full-size successful answer, of which `dropMidResponse` sends half. Its
    /// ID token is minted but recorded nowhere, and the refresh token is the one presented.
    static func wouldBeAnswer(presented: String?, uid: String?, options: FakeFirebase.Options, now: Date) -> Reply {
        let subject = IDTokenMinter.Subject(
            uid: uid ?? "unknown", email: nil, provider: "anonymous", authTime: Int(saturating: now.timeIntervalSince1970))
        let (idToken, _) = IDTokenMinter.mint(for: subject, issuedAt: now, lifetime: options.lifetime, projectID: options.projectID)
        return .json(200, SecureTokenResponse(
            access_token: idToken, expires_in: String(options.lifetime), id_token: idToken,
            project_id: options.projectNumber, refresh_token: presented ?? "", user_id: uid ?? "unknown"))
    }
}
