import Foundation
import NIOConcurrencyHelpers
import TokendCore
import TokendProviders
import TokendSystem

/// A small OAuth 2.0 / OpenID Connect server on 127.0.0.1 for what oidc-provider-mock lacks: a
/// revocation endpoint that records the client authentication it got, the device grant with every
/// polling answer, scripted token answers (rotation, `expires_in` as a string or missing) and a
/// discovery document whose issuer can be wrong. Every request is recorded. Its faults, scripted
/// answers included, are the shared fault layer's (`faults`), on any of its routes.
public final class FakeOIDC: FakeRoutes {
    public typealias Request = IncomingRequest

    /// A session the fake issued: the scopes granted at sign-in; a rotating grant answers every
    /// refresh with a new refresh token and refuses the old one from then on (`invalid_grant`).
    public struct Grant: Sendable {
        public var scopes: [String]
        public var rotating: Bool
    }

    /// An access token the fake minted by a refresh grant: what it is good for.
    public struct Minted: Sendable, Equatable {
        /// The scopes asked for (`scope`), or the grant's when none were.
        public var scopes: [String]
        /// RFC 8707 `resource`, or an `audience` parameter, as sent.
        public var resource: String?
        public var audience: String?
        /// The refresh token the grant presented.
        public var refreshToken: String

        public init(scopes: [String], resource: String? = nil, audience: String? = nil, refreshToken: String) {
            self.scopes = scopes
            self.resource = resource
            self.audience = audience
            self.refreshToken = refreshToken
        }
    }

    struct State {
        var grants: [String: Grant] = [:]
        var minted: [String: Minted] = [:]
        /// Refresh tokens a rotation replaced: presenting one again is `invalid_grant`.
        var retired: Set<String> = []
        var issuerOverride: String?
        var counter = 0
    }

    private let server = StandInServer()
    private let state = NIOLockedValueBox(State())
    public let faults = FaultLayer(defaultTarget: "/token")

    /// The port the kernel picked.
    public var port: Int { server.port }
    public var issuer: String { "http://127.0.0.1:\(port)" }

    private init() {}

    public static func start() async throws -> FakeOIDC {
        let fake = FakeOIDC()
        try await fake.server.start(fake)
        return fake
    }

    public func shutdown() async {
        await server.shutdown()
    }

    public var requests: [Request] { faults.requests }
    /// The providers' transport, answered by this fake in-process (no socket).
    public func transport(deadline: Double = HTTPTransport.defaultDeadline) -> HTTPTransport {
        FakeResponder(routes: self).transport(deadline: deadline, clock: SystemWallClock())
    }
    /// Answers for `path` (the token endpoint), used in order before its usual answer (a fresh
    /// token there): status faults, each held back `delay` seconds (a slow provider).
    public func script(_ answers: [Reply], for path: String = "/token", delay: Double = 0) {
        for answer in answers {
            faults.add(.status(answer.status, body: String(decoding: answer.body, as: UTF8.self), headers: answer.extraHeaders), .requests(1), path, late: delay)
        }
    }
    public func claimIssuer(_ issuer: String) { state.withLockedValue { $0.issuerOverride = issuer } }

    /// Registers `refreshToken` as a session granted `scopes`: refresh grants presenting it are
    /// checked (a `scope` outside the grant is `invalid_scope`) and their tokens recorded.
    /// Refresh tokens never registered get a fresh token unchecked, as before.
    public func grant(refreshToken: String, scopes: [String], rotating: Bool = false) {
        state.withLockedValue { $0.grants[refreshToken] = Grant(scopes: scopes, rotating: rotating) }
    }

    /// What an access token minted by a refresh grant carries; nil for one the fake never minted.
    public func minted(_ accessToken: String) -> Minted? { state.withLockedValue { $0.minted[accessToken] } }

    /// The refresh tokens of registered sessions that are still good (not rotated away).
    public var liveRefreshTokens: Set<String> { state.withLockedValue { Set($0.grants.keys) } }

    /// The refresh grants received, in order (scripted answers included).
    public var refreshGrants: [Request] { requests.filter { $0.path == "/token" && $0.form["grant_type"] == "refresh_token" } }
}

extension FakeOIDC {
    /// One request, answered by the routes below.
    func handle(_ request: IncomingRequest) -> Decision {
        let base = issuer
        let answer = state.withLockedValue { (state: inout State) -> Reply in
            switch request.path {
            case "/.well-known/openid-configuration":
                return .object(200, [
                    "issuer": state.issuerOverride ?? base, "token_endpoint": base + "/token", "revocation_endpoint": base + "/revoke",
                    "device_authorization_endpoint": base + "/device", "authorization_endpoint": base + "/authorize", "jwks_uri": base + "/jwks",
                ])
            case "/token":
                if request.form["grant_type"] == "refresh_token", let refreshToken = request.form["refresh_token"],
                    state.grants[refreshToken] != nil || state.retired.contains(refreshToken)
                {
                    return Self.refreshGrant(request, refreshToken: refreshToken, state: &state)
                }
                state.counter += 1
                return .object(200, ["access_token": "fake-access-\(state.counter)", "expires_in": 3600, "token_type": "Bearer"])
            case "/revoke":
                return Reply(status: 200, body: "")
            case "/device":
                return .object(200, [
                    "device_code": "device-code-1", "user_code": "WDJB-MJHT", "verification_url": base + "/activate", "expires_in": "600", "interval": 1,
                ])
            default:
                return .object(404, ["error": "not_found"])
            }
        }
        return Decision(action: .reply(answer))
    }

    /// A refresh grant on a registered session (RFC 6749 §6): `scope` must be within the grant's,
    /// a rotated-away refresh token is dead. The minted token is recorded with what it is for.
    static func refreshGrant(_ request: Request, refreshToken: String, state: inout State) -> Reply {
        guard let grant = state.grants[refreshToken] else {
            return .object(400, ["error": "invalid_grant", "error_description": "the refresh token is not valid"])
        }
        let asked = request.form["scope"].map { $0.split(separator: " ").map(String.init) }
        if let asked, let outside = asked.first(where: { !grant.scopes.contains($0) }) {
            return .object(400, ["error": "invalid_scope", "error_description": "scope \(outside) was not granted"])
        }
        state.counter += 1
        let accessToken = "fake-access-\(state.counter)"
        let scopes = asked ?? grant.scopes
        state.minted[accessToken] = Minted(
            scopes: scopes, resource: request.form["resource"], audience: request.form["audience"], refreshToken: refreshToken)
        var answer: [String: any Sendable] = ["access_token": accessToken, "expires_in": 3600, "token_type": "Bearer", "scope": scopes.joined(separator: " ")]
        if grant.rotating {
            let rotated = "fake-refresh-\(state.counter)"
            state.grants[refreshToken] = nil
            state.retired.insert(refreshToken)
            state.grants[rotated] = grant
            answer["refresh_token"] = rotated
        }
        return .object(200, answer)
    }
}
