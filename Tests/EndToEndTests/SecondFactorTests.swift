import Foundation
import Testing
import TokendCore
import TokendFakes
import TokendProtocol
import TokendProviders
import TokendTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Issue 33, item 5: a second factor (TOTP) for Firebase / Identity Platform users, through the
/// real tokenctl and tokend against the fake (whose v2 `mfaSignIn` and `mfaEnrollment` follow
/// firebase-js-sdk, the emulator having no TOTP). Every code is computed here from the secret
/// tokenctl printed (RFC 6238), as an authenticator app would.
@Suite struct SecondFactorTests {
    static let password = "right-password-1"

    /// The code an authenticator app shows now for the `secret=` of an `otpauth://` URI.
    static func code(fromURI uri: String) throws -> String {
        let secret = try #require(URLComponents(string: uri)?.queryItems?.first { $0.name == "secret" }?.value, "no secret in \(uri)")
        return try #require(TOTP.code(base32Secret: secret, at: Date()))
    }

    /// A user `email` signed in on `work`, its address verified (Firebase enrolls no factor
    /// before), in a project whose administrator enabled TOTP (off in every new project).
    static func verifiedUser(_ world: DaemonHarness, _ email: String) async throws -> String {
        world.fake.update { $0.totpEnabled = true }
        let uid = try await FirebaseAccountTests().signUp(world, email, password: password)
        world.fake.confirmEmailVerification(uid)
        return uid
    }

    /// `tokenctl account mfa enroll work --totp`, answered as a user does: the URI read from its
    /// output, the code computed and written to its stdin. `wrong` answers a code that cannot match.
    static func enroll(_ world: DaemonHarness, wrong: Bool = false, name: String? = nil) async throws -> (status: Int32, output: String, uri: String) {
        let run = try await Interactive.start(world, ["account", "mfa", "enroll", "work", "--totp"] + (name.map { ["--name", $0] } ?? []))
        let uri = try await run.line { $0.hasPrefix("otpauth://") }
        try run.answer(wrong ? "0000" : try code(fromURI: uri))
        let status = try await run.wait()
        return (status, run.output, uri)
    }

    @Test func enrolSignInWithTheCodeAWrongCodeAndRemoval() async throws {
        try await withWorld { world in
            let uid = try await Self.verifiedUser(world, "tia@example.com")
            let before = try #require(try await world.storedSession())
            let watcher = try EventRecorder(socketPath: world.socketPath, account: "work")

            let enrolled = try await Self.enroll(world)
            #expect(enrolled.status == 0, "\(enrolled.output)")
            #expect(enrolled.uri.hasPrefix("otpauth://totp/\(world.fake.options.projectID):tia%40example.com?secret="), "\(enrolled.uri)")
            #expect(enrolled.uri.contains("&issuer=\(world.fake.options.projectID)&algorithm=SHA1&digits=6&period=30"), "\(enrolled.uri)")
            #expect(enrolled.output.contains("TOTP second factor enrolled"), "\(enrolled.output)")
            // The answer's session replaced the held one: the same user, a new refresh token.
            let after = try #require(try await world.storedSession())
            #expect(after.refreshToken != before.refreshToken)
            #expect(after.idToken.flatMap { FirebaseClaims(token: $0)?.uid } == uid)
            _ = try await watcher.first("user_changed, second_factor_enrolled") { $0.event == .userChanged && $0.reason == "second_factor_enrolled" }
            let factors = world.fake.secondFactors(of: uid)
            #expect(factors.count == 1)
            let factor = try #require(factors.first)

            // `account show` and `mfa list` list it.
            let shown = try await world.tokenctl(["account", "show", "work"])
            #expect(shown.stdout.contains("second factors") && shown.stdout.contains("\(factor) (TOTP \"tokend on \(ProcessInfo.processInfo.hostName)\")"), "\(shown.stdout)")
            let listed = try await world.tokenctl(["account", "mfa", "list", "work"])
            #expect(listed.status == 0 && listed.stdout.hasPrefix("\(factor)  totp"), "\(listed.stdout) \(listed.stderr)")

            // A wrong code: 77, and nothing stored.
            #expect(try await world.tokenctl(["logout", "work"]).status == 0)
            let wrong = try await world.tokenctl(["login", "work", "--email", "tia@example.com"], stdin: "\(Self.password)\n0000\n")
            #expect(wrong.status == 77, "\(wrong.stderr)")
            #expect(wrong.stderr.contains("INVALID_CODE"), "\(wrong.stderr)")
            #expect(try await world.storedSession() == nil, "a session was stored after a wrong code")
            #expect(try await world.status().state == "needs_login")

            // The right code (the password, then the code on the next line of stdin).
            let code = try Self.code(fromURI: enrolled.uri)
            let login = try await world.tokenctl(["login", "work", "--email", "tia@example.com"], stdin: "\(Self.password)\n\(code)\n")
            #expect(login.status == 0, "\(login.stderr)")
            let token = try await world.tokenctl(["token", "work"])
            let signedIn = try #require(JWTClaims.decode(SecondFactorClaim.self, from: token.stdout.trimmingCharacters(in: .newlines)))
            #expect(signedIn.firebase?.sign_in_second_factor == "totp")
            // Issue 44, item 9: and which factor (the emulator's `generateJwt`, as production).
            #expect(signedIn.firebase?.second_factor_identifier == factor)
            #expect(signedIn.user_id == uid)
            // The pending credential never reached the client or the log.
            let pending = try #require(world.fake.requests.last { $0.path.hasSuffix("mfaSignIn:finalize") })
            #expect(pending.status == 200)
            #expect(!world.daemonLog.contains("mfa-pending-"), "the pending credential was logged")

            // Removal of the newest (here the only) factor: Firebase answers 200 without tokens,
            // the factor is gone and the session ended (issue 44, item 5): 77, nothing kept.
            let removed = try await world.tokenctl(["account", "mfa", "remove", "work", factor])
            #expect(removed.status == 77, "\(removed.stderr)")
            #expect(removed.stderr.contains("the factor was withdrawn and Firebase ended the session; sign in again: tokenctl login work"), "\(removed.stderr)")
            _ = try await watcher.first("signed_out, second_factor_removed") { $0.event == .signedOut && $0.reason == "second_factor_removed" }
            #expect(world.fake.secondFactors(of: uid).isEmpty)
            #expect(try await world.storedSession() == nil, "the dead session was kept")
            #expect(try await world.status().state == "needs_login")
            let plain = try await world.tokenctl(["login", "work", "--email", "tia@example.com"], stdin: "\(Self.password)\n")
            #expect(plain.status == 0, "\(plain.stderr)")
            let none = try await world.tokenctl(["account", "mfa", "list", "work"])
            #expect(none.stdout == "work: no second factors\n", "\(none.stdout)")
        }
    }

    /// A streamed reply's lines (progress lines, then the response line).
    static func stream(_ world: DaemonHarness, _ command: Command, id: RequestID? = nil) async throws -> [String] {
        let socketPath = world.socketPath
        return try await offPool {
            let client = try BlockingClient(path: socketPath)
            client.setReadTimeout(seconds: 30)
            try client.send(command, id: id)
            var lines: [String] = []
            while true {
                let line = String(decoding: try client.receiveLine(), as: UTF8.self)
                lines.append(line)
                if (try? JSONDecoder().decode(Response.self, from: Data(line.utf8))) != nil { return lines }
            }
        }
    }

    struct SecondFactorClaim: Decodable {
        struct Firebase: Decodable {
            var sign_in_second_factor: String?
            var second_factor_identifier: String?
        }
        var user_id: String?
        var firebase: Firebase?
    }

    @Test func severalFactorsAreChosenWithFactorAndSMSOnlyIsRefused() async throws {
        try await withWorld { world in
            let uid = world.fake.createUser(email: "two@example.com", password: Self.password).uid
            let phone = world.fake.enrollSecondFactor(uid)
            let totp = world.fake.enrollTOTP(uid, displayName: "phone app")

            // Issue 44, item 7: SMS first, an authenticator app later. The TOTP factor is the
            // only one a terminal can answer: used without --factor.
            let beside = try await world.tokenctl(
                ["login", "work", "--email", "two@example.com"], stdin: "\(Self.password)\n\(try #require(TOTP.code(base32Secret: totp.secret, at: Date())))\n")
            #expect(beside.status == 0, "\(beside.stderr)")
            #expect(try await world.storedSession() != nil)
            #expect(try await world.tokenctl(["logout", "work"]).status == 0)

            // Two TOTP factors and no --factor: 64, each named by its display name too.
            let other = world.fake.enrollTOTP(uid, displayName: "tablet")
            let ambiguous = try await world.tokenctl(["login", "work", "--email", "two@example.com"], stdin: "\(Self.password)\n")
            #expect(ambiguous.status == 64, "\(ambiguous.stderr)")
            #expect(ambiguous.stderr.contains("\(totp.id) (TOTP \"phone app\"), \(other.id) (TOTP \"tablet\")") && ambiguous.stderr.contains("--factor"), "\(ambiguous.stderr)")
            #expect(!ambiguous.stderr.contains(phone), "the SMS factor, which cannot be chosen, was offered: \(ambiguous.stderr)")
            // An unknown one: 64.
            let unknown = try await world.tokenctl(["login", "work", "--email", "two@example.com", "--factor", "nope"], stdin: "\(Self.password)\n")
            #expect(unknown.status == 64, "\(unknown.stderr)")
            #expect(unknown.stderr.contains("SECOND_FACTOR_UNKNOWN"), "\(unknown.stderr)")
            // The SMS one: 78, reCAPTCHA.
            let sms = try await world.tokenctl(["login", "work", "--email", "two@example.com", "--factor", phone], stdin: "\(Self.password)\n")
            #expect(sms.status == 78, "\(sms.stderr)")
            #expect(sms.stderr.contains("reCAPTCHA"), "\(sms.stderr)")
            // The TOTP one, with its code.
            let code = try #require(TOTP.code(base32Secret: totp.secret, at: Date()))
            let login = try await world.tokenctl(
                ["login", "work", "--email", "two@example.com", "--factor", totp.id], stdin: "\(Self.password)\n\(code)\n")
            #expect(login.status == 0, "\(login.stderr)")
            #expect(try await world.storedSession() != nil)
        }
    }

    /// The handle is the daemon's, single use: a forged one, and one spent by a wrong code,
    /// are refused with "sign in again"; the pending credential never goes to the client.
    @Test func aForgedOrSpentHandleIsRefused() async throws {
        try await withWorld { world in
            let uid = world.fake.createUser(email: "han@example.com", password: Self.password).uid
            let totp = world.fake.enrollTOTP(uid)
            let first = Command.login(LoginArgs(account: "work", method: .email, email: "han@example.com", secret: Self.password))
            let lines = try await Self.stream(world, first, id: .number(1))
            let progress = try #require(lines.compactMap { try? JSONDecoder().decode(LoginProgress.self, from: Data($0.utf8)) }.first { $0.progress == .secondFactor })
            #expect(progress.factor == totp.id && progress.factors?.first?.kind == .totp)
            let handle = try #require(progress.handle)
            #expect(!lines.joined().contains("mfa-pending-"), "the pending credential reached the client")
            let ended = try #require(lines.last.flatMap { try? JSONDecoder().decode(Response.self, from: Data($0.utf8)) })
            #expect(ended.error?.code == .needsLogin && ended.error?.message.hasPrefix("SECOND_FACTOR_REQUIRED") == true, "\(ended)")

            let forged = Command.login(LoginArgs(account: "work", method: .secondFactor, secret: "123456", handle: "forged"))
            let refused = try await world.call(forged)
            #expect(refused.error?.code == .needsLogin && refused.error?.message.contains("SECOND_FACTOR_EXPIRED") == true, "\(refused)")

            // A wrong code spends the handle: the right code after it is refused too.
            let wrong = Command.login(LoginArgs(account: "work", method: .secondFactor, secret: "0000", handle: handle))
            #expect(try await world.call(wrong).error?.message.contains("INVALID_CODE") == true)
            let right = try #require(TOTP.code(base32Secret: totp.secret, at: Date()))
            let again = Command.login(LoginArgs(account: "work", method: .secondFactor, secret: right, handle: handle))
            #expect(try await world.call(again).error?.message.contains("SECOND_FACTOR_EXPIRED") == true)
            #expect(try await world.storedSession() == nil)
        }
    }

    /// Issue 33, item 6 with item 5: every second-factor call names the account's tenant.
    @Test func aTenantUserEnrolsAndSignsInWithTOTP() async throws {
        try await withWorld(accounts: [], startDaemon: false) { world in
            world.fake.update { $0.totpEnabled = true }
            try world.writeConfig(world.firebaseAccount("work") + "\ntenant_id = \"\(TenantTests.tenant)\"\n")
            try await world.startDaemon()
            let uid = try await Self.verifiedUser(world, "ten@example.com")
            let enrolled = try await Self.enroll(world)
            #expect(enrolled.status == 0, "\(enrolled.output)")
            #expect(try await world.tokenctl(["logout", "work"]).status == 0)
            let login = try await world.tokenctl(
                ["login", "work", "--email", "ten@example.com"], stdin: "\(Self.password)\n\(try Self.code(fromURI: enrolled.uri))\n")
            #expect(login.status == 0, "\(login.stderr)")
            let token = try await world.tokenctl(["token", "work"])
            let claims = try #require(FirebaseClaims(token: token.stdout.trimmingCharacters(in: .newlines)))
            #expect(claims.tenant == TenantTests.tenant && claims.uid == uid)
            let secondFactorCalls = world.fake.requests.filter { $0.path.contains("/v2/accounts/") }
            #expect(secondFactorCalls.count == 3, "\(secondFactorCalls.map(\.path))")
            #expect(secondFactorCalls.allSatisfy { $0.tenantID == TenantTests.tenant }, "\(secondFactorCalls.map { "\($0.path) \($0.tenantID ?? "none")" })")
        }
    }

    /// A Google sign-in (`signInWithIdp`) of a user with TOTP: the code is the first line of stdin.
    @Test func aGoogleSignInOfAUserWithTOTP() async throws {
        try await OIDCMockTests().withMock { world, mock in
            try await OIDCMockTests.startWithGoogleStandIn(world, mock)
            let first = try await OIDCMockTests.tokenctlSigningInAtTheMock(world, mock, ["login", "work", "--google"], user: "gwen")
            #expect(first.status == 0, "\(first.output)")
            let uid = try #require(FirebaseClaims(token: try await world.tokenctl(["token", "work"]).stdout.trimmingCharacters(in: .newlines))?.uid)
            let totp = world.fake.enrollTOTP(uid)
            #expect(try await world.tokenctl(["logout", "work"]).status == 0)

            let run = try await Interactive.start(world, ["login", "work", "--google", "--no-browser"])
            let url = try await run.line { $0.hasPrefix("http") && $0.contains("authorize") }
            if let form = try? await mock.send(.form(url, [("sub", "gwen")])).get(), let location = form.headers["location"] {
                _ = await mock.send(.get(location))
            }
            try run.answer(try #require(TOTP.code(base32Secret: totp.secret, at: Date())))
            let status = try await run.wait()
            #expect(status == 0, "\(run.output)")
            let token = try await world.tokenctl(["token", "work"])
            let claims = try #require(JWTClaims.decode(SecondFactorClaim.self, from: token.stdout.trimmingCharacters(in: .newlines)))
            #expect(claims.user_id == uid && claims.firebase?.sign_in_second_factor == "totp")
        }
    }
}

/// The real tokenctl with a pipe for stdin: a test reads what it printed, then answers.
final class Interactive: @unchecked Sendable {
    let pid: pid_t
    private var input: Int32
    let outputPath: String

    private init(pid: pid_t, input: Int32, outputPath: String) {
        self.pid = pid
        self.input = input
        self.outputPath = outputPath
    }

    static func start(_ world: DaemonHarness, _ arguments: [String]) async throws -> Interactive {
        let output = world.keyring.root.appendingPathComponent("tokenctl-\(UInt64.random(in: 0...UInt64.max)).out").path
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { throw HarnessError("pipe: \(errno)") }
        // The write end must not leak into other tests' children (end-of-file would never come).
        _ = fcntl(ends[1], F_SETFD, FD_CLOEXEC)
        defer { close(ends[0]) }
        do {
            let pid = try ChildProcess.start(DaemonHarness.binDirectory + "/tokenctl", arguments, environment: world.environment, stdin: ends[0], output: output)
            return Interactive(pid: pid, input: ends[1], outputPath: output)
        } catch {
            close(ends[1])
            throw error
        }
    }

    var output: String { (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "" }

    /// The first line printed that `matches`, once it is there.
    func line(_ matches: @escaping (String) -> Bool) async throws -> String {
        var found: String?
        do {
            try await poll("tokenctl prints the line expected") {
                found = self.output.split(separator: "\n").map(String.init).first(where: matches)
                return found != nil
            }
        } catch {
            ChildProcess.stop(pid)
            throw HarnessError("\(error); tokenctl printed: \(output)")
        }
        return try require(found)
    }

    /// Writes `line` to tokenctl's stdin and closes it (tokenctl reads stdin to its end).
    func answer(_ line: String) throws {
        let bytes = Array((line + "\n").utf8)
        let written = bytes.withUnsafeBytes { write(input, $0.baseAddress, $0.count) }
        close(input)
        input = -1
        guard written == bytes.count else { throw HarnessError("could not write tokenctl's stdin") }
    }

    func wait() async throws -> Int32 {
        var status: Int32?
        try await poll(timeout: 60, "tokenctl finishes") {
            status = ChildProcess.exitStatusIfEnded(self.pid)
            return status != nil
        }
        return try require(status)
    }

    deinit {
        if input >= 0 { close(input) }
    }
}
