import Foundation
import Synchronization
import TokendProviders
import TokendTestSupport

/// oidc-provider-mock (PyPI), a real third-party OpenID provider, on a free loopback port. The
/// venv is made by `scripts/lib/deps.sh` (`ensure_oidc_mock`); `TOKEND_OIDC_MOCK` may point
/// elsewhere.
final class OIDCProviderMock: Sendable {
    /// Started by `ChildProcess.start`, so ended by `ChildProcess.stop`.
    let pid: pid_t
    let issuer: String
    /// Drives the mock's endpoints the way a browser and a relying party would; redirects come
    /// back unfollowed, which is how the authorization code is read from the `Location`.
    let http = HTTPTransport(environment: [:])

    static var executable: String {
        if let path = ProcessInfo.processInfo.environment["TOKEND_OIDC_MOCK"], !path.isEmpty { return path }
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url = url.deletingLastPathComponent() }
        return url.appendingPathComponent(".venv-oidc/bin/oidc-provider-mock").path
    }

    private init(pid: pid_t, issuer: String) {
        self.pid = pid
        self.issuer = issuer
    }

    /// Starts the mock with `-p 0` and reads the port it announces on stderr.
    static func start(directory: URL) async throws -> OIDCProviderMock {
        guard FileManager.default.isExecutableFile(atPath: executable) else {
            throw HarnessError("oidc-provider-mock is not installed at \(executable): run scripts/test (it creates the venv)")
        }
        let logPath = directory.appendingPathComponent("oidc-provider-mock.log").path
        let pid = try ChildProcess.start(
            executable, ["-p", "0", "-e", "3600"],
            environment: ["PATH": "/usr/bin:/bin", "PYTHONWARNINGS": "ignore", "PYTHONUNBUFFERED": "1"], output: logPath)
        var issuer: String?
        var reaped = false
        do {
            try await poll("oidc-provider-mock did not announce its port") {
                if let status = ChildProcess.exitStatusIfEnded(pid) {
                    reaped = true
                    throw HarnessError("oidc-provider-mock exited (\(status)): \((try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "")")
                }
                let text = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
                guard let range = text.range(of: "Uvicorn running on ") else { return false }
                issuer = String(text[range.upperBound...].prefix { !$0.isWhitespace })
                return true
            }
            return OIDCProviderMock(pid: pid, issuer: try require(issuer, "no issuer"))
        } catch {
            // A reaped pid may already belong to someone else: only a live child is killed.
            if !reaped { ChildProcess.stop(pid) }
            throw error
        }
    }

    /// SIGKILL: on SIGTERM uvicorn waits for idle keep-alive connections to close. Reaped off
    /// the cooperative pool, since `waitpid` blocks its thread.
    func stop() async {
        await http.shutdown()
        let pid = self.pid
        _ = try? await offPool { ChildProcess.stop(pid) }
    }

    /// Signs `subject` in through the authorization endpoint's form and redeems the code with
    /// HTTP Basic client authentication: the refresh token a login would have produced.
    func refreshToken(for subject: String, clientID: String, clientSecret: String, scopes: String = "openid email") async throws -> String {
        let redirect = "http://127.0.0.1:9/callback"
        let query = FormEncoding.encode([
            ("client_id", clientID), ("redirect_uri", redirect), ("response_type", "code"), ("scope", scopes), ("state", "s"),
        ])
        let authorize = try await send(.form(issuer + "/oauth2/authorize?" + String(decoding: query, as: UTF8.self), [("sub", subject)])).get()
        guard authorize.isRedirect, let location = authorize.headers["location"],
            let code = URLComponents(string: location)?.queryItems?.first(where: { $0.name == "code" })?.value
        else { throw HarnessError("the mock's authorization endpoint answered \(authorize.status)") }
        let basic = Data("\(clientID):\(clientSecret)".utf8).base64EncodedString()
        let token = try await send(.form(
            issuer + "/oauth2/token", [("grant_type", "authorization_code"), ("code", code), ("redirect_uri", redirect)],
            headers: [("Authorization", "Basic \(basic)")])).get()
        let object = try JSONSerialization.jsonObject(with: Data(token.body)) as? [String: Any]
        guard let refreshToken = object?["refresh_token"] as? String else { throw HarnessError("no refresh token from the mock (\(token.status))") }
        return refreshToken
    }

    /// The mock's `/userinfo` status for an access token: 200 when it accepts it.
    func userinfoStatus(accessToken: String) async throws -> (Int, String) {
        let answer = try await send(.get(issuer + "/userinfo", headers: [("Authorization", "Bearer \(accessToken)")])).get()
        return (answer.status, String(decoding: answer.body, as: UTF8.self))
    }

    /// One request to the mock, sent again once if the connection was closed under it: the
    /// mock's development server closes connections the client's pool may be about to reuse
    /// (seen on a loaded CI machine as `remoteConnectionClosed`). Every call here may be repeated.
    func send(_ request: HTTPRequest) async -> Result<HTTPAnswer, TransportFailure> {
        let first = await http.send(request)
        if case .failure(let failure) = first, failure.kind == .network { return await http.send(request) }
        return first
    }

    /// The mock's control plane: `subject`'s claims (a JSON object) from now on. PUT, which the
    /// daemon's HTTP client does not speak: curl does.
    func setClaims(of subject: String, _ json: String) async throws {
        let url = issuer + "/users/\(subject)"
        let run = try await offPool {
            try ChildProcess.run("/usr/bin/curl", ["-fsS", "-X", "PUT", "-H", "Content-Type: application/json", "--data-binary", json, url], environment: ["PATH": "/usr/bin:/bin"], timeout: 10)
        }
        guard run.status == 0 else { throw HarnessError("PUT /users/\(subject) failed: \(run.stderr)") }
    }

    /// The mock's control plane: every token of `subject` is revoked.
    func revokeTokens(of subject: String) async throws {
        let answer = try await send(HTTPRequest(method: .post, url: issuer + "/users/\(subject)/revoke-tokens")).get()
        guard (200...299).contains(answer.status) else { throw HarnessError("revoke-tokens answered \(answer.status)") }
    }
}

func require<T>(_ value: T?, _ message: String = "missing value") throws -> T {
    guard let value else { throw HarnessError(message) }
    return value
}
