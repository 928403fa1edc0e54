import Foundation

/// `/_fake/…`: the Swift API over HTTP, for shell scripts and demos that run the fake as a
/// separate process. Never logged as a request, never faulted, never delayed. (`/_fake/faults`
/// is every fake's: `FaultLayer.control`.)
///
/// It hands out live tokens (`GET /_fake/requests`, `…/refresh_token`): a test double only.
extension FakeFirebase.Backend {
    func control(_ request: IncomingRequest, segments: [String]) -> Reply {
        do throws(ControlPlaneError) {
            return try routeControl(request.method, segments, body: request.body)
        } catch {
            return .json(error.status, ControlWire.Failure(error: error.message))
        }
    }

    private func routeControl(_ method: String, _ segments: [String], body: [UInt8]) throws(ControlPlaneError) -> Reply {
        let resource = segments.first ?? ""
        switch (resource, segments.count) {
        case ("users", 1):
            try require(method, "POST")
            let new = try ControlWire.decode(ControlWire.NewUser.self, body)
            return .json(200, try createUserOverHTTP(new))
        case ("users", 3) where segments[2] == "refresh_token":
            try require(method, "GET")
            let uid = segments[1]
            guard let token = newestRefreshToken(uid: uid) else { throw .notFound("no refresh token was issued to \(uid)") }
            return .json(200, ControlWire.RefreshToken(uid: uid, refresh_token: token))
        case ("users", 3):
            try require(method, "POST")
            try act(segments[2], on: segments[1])
            return .json(200, ControlWire.Done())
        case ("options", 1):
            if method == "GET" { return .json(200, ControlWire.Options(options)) }
            try require(method, "POST")
            let change = try ControlWire.decode(ControlWire.Options.self, body)
            try validate(change)
            update(change.apply)
            return .json(200, ControlWire.Options(options))
        case ("requests", 1):
            try require(method, "GET")
            return Reply(status: 200, contentType: Reply.jsonContentType, body: Array(FakeJSON.encode(requests.map(ControlWire.Request.init), snakeCase: true)))
        default:
            throw .notFound("no control endpoint /_fake/\(segments.joined(separator: "/"))")
        }
    }

    private func require(_ method: String, _ expected: String) throws(ControlPlaneError) {
        guard method == expected else { throw .methodNotAllowed }
    }

    private func createUserOverHTTP(_ new: ControlWire.NewUser) throws(ControlPlaneError) -> ControlWire.Session {
        if let email = new.email, !email.contains("@") { throw .badRequest("\"email\" is not an email address") }
        guard let minted = createUser(email: new.email, password: new.password, reuseExisting: false) else {
            throw ControlPlaneError(status: 409, message: "a user with that email exists")
        }
        return ControlWire.Session(
            uid: minted.uid, refresh_token: minted.refreshToken, id_token: minted.idToken, expires_in: minted.lifetime,
            expires_at: Int(saturating: minted.expiresAt.timeIntervalSince1970))
    }

    private func act(_ action: String, on uid: String) throws(ControlPlaneError) {
        let found: Bool
        switch action {
        case "disable": found = disableUser(uid)
        case "delete": found = deleteUser(uid)
        case "revoke": found = revokeTokens(uid)
        default: throw .notFound("unknown user action \"\(action)\" (disable, delete, revoke)")
        }
        guard found else { throw .notFound("no user \(uid)") }
    }

    private func validate(_ change: ControlWire.Options) throws(ControlPlaneError) {
        if let lifetime = change.lifetime, lifetime <= 0 { throw .badRequest("\"lifetime\" must be positive") }
        if let latency = change.latency, latency < 0 { throw .badRequest("\"latency\" must not be negative") }
    }
}
