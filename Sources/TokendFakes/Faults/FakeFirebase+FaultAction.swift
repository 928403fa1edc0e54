import Foundation

extension FakeFirebase.Fault {
    /// What the connection layer does for this fault. Nothing here touches the ledger: a faulted
    /// request leaves every user and token as it was.
    func action(presented: String?, uid: String?, options: FakeFirebase.Options, now: Date) -> Decision.Action {
        switch self {
        case .status(let status, let retryAfter, let body):
            var reply = body.map { text in
                // A custom body is sent as written; JSON-looking text is labelled JSON, the rest
                // HTML, which is what Google's frontends serve for 502s and the like.
                Reply.text(status, text, contentType: text.first == "{" ? Reply.jsonContentType : "text/html; charset=UTF-8")
            } ?? .rejection(.http(status))
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
            return .dropMidResponse(Self.wouldBeAnswer(presented: presented, uid: uid, options: options, now: now))
        case .trickle:
            return .trickle(Self.wouldBeAnswer(presented: presented, uid: uid, options: options, now: now))
        case .redirect(let status, let location):
            var reply = Reply.text(status, "", contentType: "text/html; charset=UTF-8")
            reply.extraHeaders["Location"] = location
            return .reply(reply)
        case .malformedJSON:
            return .reply(.text(
                200, "<!DOCTYPE html><html><head><title>Network login</title></head><body>Sign in to continue</body></html>",
                contentType: Reply.jsonContentType))
        case .missingFields:
            var fields = ["token_type": "Bearer", "project_id": options.projectNumber]
            fields["refresh_token"] = presented
            fields["user_id"] = uid
            return .reply(.json(200, fields))
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

    /// A full-size successful answer, of which `dropMidResponse` sends half. Its ID token is minted
    /// but recorded nowhere, and the refresh token is the one presented: no state changes.
    private static func wouldBeAnswer(presented: String?, uid: String?, options: FakeFirebase.Options, now: Date) -> Reply {
        let subject = IDTokenMinter.Subject(
            uid: uid ?? "unknown", email: nil, provider: "anonymous", authTime: Int(saturating: now.timeIntervalSince1970))
        let (idToken, _) = IDTokenMinter.mint(for: subject, issuedAt: now, lifetime: options.lifetime, projectID: options.projectID)
        return .json(200, SecureTokenResponse(
            access_token: idToken, expires_in: String(options.lifetime), id_token: idToken,
            project_id: options.projectNumber, refresh_token: presented ?? "", user_id: uid ?? "unknown"))
    }
}
