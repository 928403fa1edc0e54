import Foundation
import Testing
import TokendCore
import TokendProtocol
import TokendFakes
import TokendTestSupport

/// Issue 3, item 1: every kind of provider fault, against the real daemon and keyring. For each:
/// the held token is served while valid, a dead one is never served (exit 75 instead), refreshing
/// resumes on its own once the provider is back, and the keyring's refresh token is
/// byte-identical until a refresh succeeds.
@Suite struct ProviderFaultTests {
    static let faults: [FakeFirebase.Fault] = [
        .refuse, .hang, .drop, .dropMidResponse,
        .status(500), .status(502), .status(503), .status(504), .status(408),
        .status(429, retryAfter: 3), .status(429),
        .firebaseError("TOO_MANY_ATTEMPTS_TRY_LATER"), .malformedJSON, .missingFields,
    ]

    /// Six-second tokens: the held one dies five seconds into a twelve-second fault window, which
    /// leaves seven seconds in which a dead token must never be served.
    static let lifetime = 6
    static let faultWindow = 12.0

    @Test(arguments: faults)
    func transientFaultKeepsServingNeverServesDeadAndRecovers(fault: FakeFirebase.Fault) async throws {
        try await transientFault(fault, oidc: false)
    }

    /// Issue 3's matrix (refused, hang, drop, 5xx, 429, junk) for an OIDC account: its token
    /// endpoint is the fake's, which answers in OAuth's shape (string `expires_in` included).
    @Test(arguments: [FakeFirebase.Fault.refuse, .hang, .drop, .status(503), .status(429), .malformedJSON])
    func oidcAccountUnderTransientFaults(fault: FakeFirebase.Fault) async throws {
        try await transientFault(fault, oidc: true)
    }

    func transientFault(_ fault: FakeFirebase.Fault, oidc: Bool) async throws {
        var options = FakeFirebase.Options()
        options.lifetime = Self.lifetime
        options.rotate = true
        try await withWorld(options: options, startDaemon: !oidc) { world in
            if oidc {
                let base = "http://\(world.fake.emulatorHost)"
                try world.writeConfig("""
                    [account.work]
                    provider = "oidc"
                    issuer = "\(base)"
                    client_id = "cli"
                    token_endpoint = "\(base)/securetoken.googleapis.com/v1/token?key=test-api-key"
                    """)
                try await world.startDaemon()
            }
            let user = try await world.importNewUser()
            // The fault first, then the baseline: the proactive refresh (due half-way through the
            // first token's life) may beat the injection on a loaded machine, and its rotated token
            // must be the baseline, not the imported one. None can succeed after the injection.
            let injectedAt = Date()
            world.fake.faults.inject(fault, forSeconds: Self.faultWindow)
            let windowEnd = injectedAt.addingTimeInterval(Self.faultWindow)
            var baseline: TokenSet?
            try await poll("the keyring holds the newest refresh token the fake issued") {
                baseline = try await world.storedSession()
                return baseline != nil && baseline?.refreshToken == world.fake.newestRefreshToken(uid: user.uid)
            }
            let stored = try #require(baseline)
            let heldExpiry = try #require(stored.idTokenExpiresAt)
            var served = 0
            var refused = 0
            // Whether a request was asked once the held token had died, and answered while the
            // fault still held: only then is a refusal due. A loaded machine (CI's two cores with a
            // headless browser beside) once spent the whole window before the first request.
            var askedWhileDead = false
            // Whether an answer came back while the held token still had more than min_valid (1 s)
            // left: only then was serving it due. Judged when the clients began, a loaded machine
            // (three builds beside the suite) spent that margin before the first tokenctl started.
            var answeredWhileAlive = false
            while Date() < windowEnd.addingTimeInterval(-0.5) {
                let asked = Date()
                let run = try await world.tokenctl(["token", "work", "--min-valid", "1", "--timeout", "1"])
                if run.status == 0 {
                    let expiry = try #require(JWTClaims(token: run.stdout.trimmingCharacters(in: .newlines))?.expiresAt)
                    #expect(expiry.timeIntervalSince(asked) >= 1 - 0.01, "served a token that dies within min_valid")
                    served += 1
                } else {
                    #expect(run.status == 75, "\(fault): \(run.stderr)")
                    // The daemon judged the request at some instant before the answer came back:
                    // a refusal is right only if by then the held token had less than min_valid
                    // (1 s) left. Judged by `asked`, a loaded machine's slow tokenctl start failed it.
                    #expect(Date() > heldExpiry.addingTimeInterval(-1.1), "refused while the held token was still good")
                    refused += 1
                }
                if asked > heldExpiry.addingTimeInterval(-1), Date() < windowEnd { askedWhileDead = true }
                if Date() < heldExpiry.addingTimeInterval(-1.1) { answeredWhileAlive = true }
                let now = try await world.storedSession()?.refreshToken
                let refreshedSince = world.fake.requests.contains { $0.status == 200 && $0.at > injectedAt }
                #expect(refreshedSince || now == stored.refreshToken, "a transient fault touched the refresh token: \(now == nil ? "lookup found nothing" : "changed"); requests: \(world.fake.requests.map { "\($0.at.timeIntervalSince1970) \($0.status.map(String.init) ?? "-") \($0.fault.map { "\($0)" } ?? "")" })")
                try await Task.sleep(for: .milliseconds(250))  // client pacing
            }
            #expect(served > 0 || !answeredWhileAlive, "answered while the held token was good, yet never served")
            #expect(refused > 0 || !askedWhileDead, "the held token died during the fault and was not refused")
            // Recovery within the backoff cap, by itself.
            try await poll(timeout: 330, interval: 0.25, "refresh after \(fault)") {
                world.fake.requests.contains { $0.status == 200 && $0.at > windowEnd }
            }
            let run = try await world.tokenctl(["token", "work", "--min-valid", "1"])
            #expect(run.status == 0, "\(run.stderr)")
            try await poll("keyring catches up") {
                try await world.storedSession()?.refreshToken != stored.refreshToken
            }
        }
    }

    /// A port where nothing listens: connection refused for real. The session is kept and the
    /// answer is 75; pointing the account at another provider (SIGHUP) sends it nothing.
    @Test func connectionRefusedThenReloadToALiveProvider() async throws {
        try await withWorld(startDaemon: false) { world in
            try world.writeConfig("[account.work]\nprovider = \"firebase\"\napi_key = \"k\"\nemulator = \"127.0.0.1:1\"\n")
            try await world.startDaemon()
            let session = world.fake.createUser()
            let imported = try await world.tokenctl(["import", "work"], stdin: session.refreshToken)
            #expect(imported.status == 75, "\(imported.stderr)")
            #expect(try await world.storedSession()?.refreshToken == session.refreshToken, "the import is stored even though the provider is down")
            let token = try await world.tokenctl(["token", "work", "--timeout", "1"])
            #expect(token.status == 75)
            #expect(try await world.status().lastError?.code == "network")
            // Pointing the account at a live provider by SIGHUP is an endpoint change: the session
            // belongs to the endpoint that issued it, so nothing is sent there and nothing deleted.
            try world.writeConfig(world.firebaseAccount("work"))
            world.signalDaemon(SIGHUP)
            try await poll(interval: 0.25, "the reload is applied") {
                try await world.tokenctl(["token", "work", "--timeout", "1"]).status == 78
            }
            #expect(world.fake.requests.isEmpty, "the session went to an endpoint that did not issue it")
            #expect(try await world.storedSession()?.refreshToken == session.refreshToken, "and it is kept")
        }
    }
}

/// Issue 3, item 2: permanent and configuration failures.
@Suite struct PermanentFailureTests {
    static let needsLogin: [FakeFirebase.Fault] = [
        .oauthError("invalid_grant"), .firebaseError("TOKEN_EXPIRED"), .firebaseError("USER_DISABLED"),
        .firebaseError("USER_NOT_FOUND"), .firebaseError("INVALID_REFRESH_TOKEN"),
    ]

    /// The proactive refresh meets the verdict: needs_login, exit 77, and no further requests.
    @Test(arguments: needsLogin)
    func permanentFailureNeedsLogin(fault: FakeFirebase.Fault) async throws {
        var options = FakeFirebase.Options()
        options.lifetime = 3
        try await withWorld(options: options) { world in
            try await world.importNewUser()
            world.fake.faults.inject(fault, count: 100)
            try await poll("needs_login after \(fault)") { try await world.status().state == "needs_login" }
            let requests = world.fake.requests.count
            for _ in 0..<3 {
                let run = try await world.tokenctl(["token", "work"])
                #expect(run.status == 77)
                #expect(run.stderr.contains("tokenctl login work"), "\(run.stderr)")
            }
            // Longer than the token lived and than the first retries would take: nothing more is asked.
            try await Task.sleep(for: .seconds(4))
            #expect(world.fake.requests.count == requests)
            try await world.storedSessionDeleted("the refused refresh token is deleted")
        }
    }

    @Test(arguments: [FakeFirebase.Fault.firebaseError("PROJECT_NUMBER_MISMATCH"), .oauthError("invalid_client", status: 401)])
    func configurationFailureIsExit78WithTheProvidersMessage(fault: FakeFirebase.Fault) async throws {
        try await withWorld { world in
            let session = try await world.importNewUser()
            world.fake.faults.inject(fault, count: 100)
            let run = try await world.tokenctl(["refresh", "work"])
            #expect(run.status == 78, "\(run.stderr)")
            let code = try #require(try await world.status().lastError?.code)
            #expect(run.stderr.contains(code))
            #expect(try await world.storedSession()?.refreshToken == session.refreshToken, "a configuration error is not a revoked session")
        }
    }

    @Test func badAPIKeyIsExit78() async throws {
        try await withWorld(startDaemon: false) { world in
            try world.writeConfig(world.firebaseAccount("work", apiKey: "invalid-key"))
            try await world.startDaemon()
            let session = world.fake.createUser()
            let run = try await world.tokenctl(["import", "work"], stdin: session.refreshToken)
            #expect(run.status == 78)
            #expect(run.stderr.contains("API key not valid"), "\(run.stderr)")
            let token = try await world.tokenctl(["token", "work"])
            #expect(token.status == 78)
        }
    }
}

extension FakeFirebase.Fault: CustomTestStringConvertible {
    public var testDescription: String { description }
}
