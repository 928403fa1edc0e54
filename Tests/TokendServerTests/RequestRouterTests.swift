import Foundation
import Testing
import TokendCore
import TokendKeyring
import TokendProtocol
import TokendProviders
@testable import TokendServer
import TokendTestSupport

/// Each op's handler against a stub engine: the engine call it makes, how the result becomes a
/// reply, and that every error the engine gives reaches the client with the request's id.
@Suite struct RequestRouterTests {
    static let expiry = ManualClock().now().addingTimeInterval(3600)

    @Test func helloIsAnsweredWithoutAnyProvider() async {
        let stub = StubbedHandler()
        let response = await stub.respond(#"{"op":"hello","id":"h"}"#)
        #expect(response.ok && response.id == .string("h"))
        #expect(response.protocol == protocolVersion)
        #expect(response.version == "test")
        // A router with no configuration file behind it (the daemon's has one) cannot reload.
        #expect(response.capabilities == Op.allCases.filter { $0 != .reload }.map(\.rawValue))
        #expect(stub.engine.calls.isEmpty, "hello asks the engine nothing")
    }

    @Test func reloadWithoutAConfigurationFileIsAnUnsupportedOp() async {
        let stub = StubbedHandler()
        let response = await stub.respond(#"{"op":"reload","id":2}"#)
        #expect(!response.ok && response.id == .number(2))
        #expect(response.error?.code == .unsupportedOp)
    }

    @Test func tokenPassesEveryFieldToTheEngineAndAnswersTheGrant() async {
        var script = StubEngine.Script()
        script.token = .success(TokenGrant(token: "tok", kind: .access, expiresAt: Self.expiry))
        let stub = StubbedHandler(script)
        let response = await stub.respond(
            #"{"op":"token","id":3,"account":"work","min_valid":120,"kind":"access","timeout":5,"scope":"b  a","audience":"api"}"#)
        let scope = TokenScope(scopes: ["a", "b"], audience: "api")
        #expect(stub.engine.calls == [.token(account: "work", kind: .access, minValid: 120, timeout: 5, scope: scope)])
        #expect(response.ok && response.id == .number(3))
        #expect(response.account == "work" && response.token == "tok" && response.kind == .access)
        #expect(response.expiresAt == Timestamp.format(Self.expiry))
        #expect(response.expiresIn == 3600, "counted from the engine's clock")
    }

    @Test func tokenFillsTheDefaults() async {
        let stub = StubbedHandler()
        _ = await stub.respond(#"{"op":"token","account":"work"}"#)
        #expect(stub.engine.calls == [.token(account: "work", kind: nil, minValid: 60, timeout: 30, scope: nil)])
    }

    /// Every error the engine can answer reaches the client as it is, with the request's id,
    /// whichever op asked.
    @Test(arguments: [
        TokendError.Code.unknownAccount, .needsLogin, .unavailable, .keyringLocked, .keyringUnavailable, .configError, .badRequest,
    ])
    func everyEngineErrorReachesTheClient(_ code: TokendError.Code) async {
        let error = TokendError(code, "what to do next")
        let stub = StubbedHandler(.failing(error))
        for line in [
            #"{"op":"token","id":1,"account":"work"}"#, #"{"op":"refresh","id":1,"account":"work"}"#,
            #"{"op":"import","id":1,"account":"work","refresh_token":"r"}"#, #"{"op":"logout","id":1,"account":"work"}"#,
            #"{"op":"status","id":1,"account":"work"}"#, #"{"op":"list","id":1}"#, #"{"op":"watch","id":1,"account":"work"}"#,
            #"{"op":"account","id":1,"account":"work","action":"show"}"#, #"{"op":"account","id":1,"account":"work","action":"verify_email"}"#,
            #"{"op":"account","id":1,"account":"work","action":"reset_password"}"#,
            #"{"op":"account","id":1,"account":"work","action":"upgrade","email":"a@example.com","secret":"pw"}"#,
            #"{"op":"account","id":1,"account":"work","action":"delete","confirm":true}"#,
        ] {
            let response = await stub.respond(line)
            #expect(response.ok == false && response.error == error && response.id == .number(1), "\(line)")
        }
        #expect(stub.engine.calls.count == 12, "each line asked the engine once")
    }

    @Test func refreshAndImportAnswerTheNewExpiry() async {
        var script = StubEngine.Script()
        script.expiry = .success(Self.expiry)
        let stub = StubbedHandler(script)
        let refreshed = await stub.respond(#"{"op":"refresh","account":"work","timeout":7}"#)
        let dated = await stub.respond(#"{"op":"import","account":"work","refresh_token":" r ","expires_at":"2030-01-01T00:00:00Z","access_token":"a"}"#)
        let undated = await stub.respond(#"{"op":"import","account":"work","refresh_token":"r","access_token":"a","id_token":"opaque"}"#)
        for response in [refreshed, dated, undated] {
            #expect(response.ok && response.account == "work" && response.expiresIn == 3600)
        }
        var tokens = TokenSet(refreshToken: "r")
        // Opaque tokens are kept only with an `expires_at`: one of unknown expiry could not be served safely.
        tokens.accessToken = "a"
        tokens.accessTokenExpiresAt = Timestamp.parse("2030-01-01T00:00:00Z")
        #expect(stub.engine.calls == [
            .refresh(account: "work", timeout: 7), .install(account: "work", tokens: tokens, timeout: 30),
            .install(account: "work", tokens: TokenSet(refreshToken: "r"), timeout: 30),
        ])
    }

    @Test func anExpiryTheEngineDoesNotKnowIsLeftOut() async {
        var script = StubEngine.Script()
        script.expiry = .success(nil)
        let response = await StubbedHandler(script).respond(#"{"op":"refresh","account":"work"}"#)
        #expect(response.ok && response.account == "work" && response.expiresAt == nil && response.expiresIn == nil)
    }

    @Test(arguments: [
        (RevocationOutcome?.some(.revoked), "revoked", false), (.unsupported("no revocation endpoint"), "unsupported", true),
        (.failed(RefreshFailure(code: "http_503", message: "HTTP 503")), "failed", true), (nil, nil, false),
    ] as [(RevocationOutcome?, String?, Bool)])
    func logoutSaysWhatTheProviderDid(_ outcome: RevocationOutcome?, _ revocation: String?, _ warns: Bool) async {
        var script = StubEngine.Script()
        script.logout = .success(LogoutOutcome(revocation: outcome))
        let stub = StubbedHandler(script)
        let response = await stub.respond(#"{"op":"logout","account":"corp"}"#)
        #expect(stub.engine.calls == [.logout(account: "corp")])
        #expect(response.ok && response.account == "corp" && response.revocation == revocation)
        #expect((response.warning != nil) == warns)
    }

    @Test func listAndStatusAnswerTheEnginesAccounts() async {
        var script = StubEngine.Script()
        let at = Date(timeIntervalSince1970: 1_800_000_000)
        script.statuses = .success([AccountReport(
            name: "work", provider: .firebase, state: "retrying", keyring: .locked, at: at, expiresAt: at.addingTimeInterval(59.9),
            lastRefresh: at.addingTimeInterval(-3000), nextRefresh: at.addingTimeInterval(30), lastError: RefreshFailure(code: "http_503", message: "HTTP 503"),
            message: "try later", unsaved: true, gitHosts: [], gitUsername: "oauth2")])
        let stub = StubbedHandler(script)
        #expect(await stub.respond(#"{"op":"list"}"#).accounts?.map(\.name) == ["work"])
        // The report becomes wire text here: dates as RFC 3339, whole seconds left rounded down, empty lists left out.
        var expected = AccountStatus(name: "work", provider: "firebase", state: "retrying", keyring: "locked")
        expected.expiresAt = Timestamp.format(at.addingTimeInterval(59.9))
        expected.expiresIn = 59
        expected.lastRefresh = Timestamp.format(at.addingTimeInterval(-3000))
        expected.nextRefresh = Timestamp.format(at.addingTimeInterval(30))
        expected.lastError = RefreshFailure(code: "http_503", message: "HTTP 503")
        expected.message = "try later"
        expected.unsaved = true
        expected.gitUsername = "oauth2"
        #expect(await stub.respond(#"{"op":"status","account":"work"}"#).accounts == [expected])
        #expect(stub.engine.calls == [.statuses(account: nil), .statuses(account: "work")])
    }

    @Test func watchAcknowledgesThenStreamsEventsWithEmailOnlyForProfile() async {
        var script = StubEngine.Script()
        script.accountNames = ["home", "work"]
        script.statuses = .success([])
        let stub = StubbedHandler(script)
        for (line, watching, email) in [
            (#"{"op":"watch","id":1}"#, ["home", "work"], nil), (#"{"op":"watch","id":1,"account":"work","profile":true}"#, ["work"], "ada@example.com"),
        ] as [(String, [String], String?)] {
            guard case .stream(let stream) = await stub.reply(Array(line.utf8)) else { Issue.record("no stream: \(line)"); continue }
            var lines = stream.makeAsyncIterator()
            guard case .response(let first)? = await lines.next() else { Issue.record("no acknowledgement: \(line)"); continue }
            #expect(first.ok && first.id == .number(1) && first.watching == watching)
            var event = Event(.signedIn, account: "work", at: Date(timeIntervalSince1970: 1_800_000_000))
            event.email = "ada@example.com"
            event.signInProvider = "password"
            stub.hub.publish(event)
            guard case .event(let received)? = await lines.next() else { Issue.record("no event: \(line)"); continue }
            var expected = Event(event: .signedIn, account: "work", at: Timestamp.format(Date(timeIntervalSince1970: 1_800_000_000)))
            expected.signInProvider = "password"
            expected.email = email
            #expect(received == expected)
        }
        #expect(stub.engine.calls == [.statuses(account: nil), .accountNames, .statuses(account: "work")], "a refused configuration is checked first")
        #expect(stub.hub.subscriberCount == 0, "a dropped stream leaves no subscription")
    }

    @Test func loginStreamsEachStepThenItsOutcome() async {
        var script = StubEngine.Script()
        script.loginSteps = [.openURL("http://127.0.0.1:1/authorize"), .waiting("the browser")]
        script.signIn = .success(LoginSummary(expiresAt: Self.expiry, signInProvider: "oidc"))
        let stub = StubbedHandler(script)
        let lines = await stub.stream(#"{"op":"login","id":4,"account":"corp","method":"browser","timeout":60}"#)
        #expect(stub.engine.calls == [.login(account: "corp", method: .browser, email: nil, create: false, secret: nil, timeout: 60)])
        guard lines.count == 3, case .progress(let open) = lines[0], case .progress(let waiting) = lines[1], case .response(let done) = lines[2] else {
            Issue.record("lines: \(lines)"); return
        }
        #expect(open.progress == .openURL && open.url == "http://127.0.0.1:1/authorize" && open.id == .number(4))
        #expect(waiting.progress == .waiting && waiting.message == "the browser")
        #expect(done.ok && done.progress == "done" && done.signInProvider == "oidc" && done.expiresIn == 3600 && done.id == .number(4))
    }

    @Test func aFailedLoginEndsItsStreamWithTheError() async {
        let error = TokendError(.needsLogin, "INVALID_LOGIN_CREDENTIALS: the email or password is wrong")
        let stub = StubbedHandler(.failing(error))
        let lines = await stub.stream(#"{"op":"login","account":"work","method":"email","email":" ada@example.com ","secret":" pw "}"#)
        #expect(lines == [.response(.failure(error))])
        #expect(stub.engine.calls == [.login(account: "work", method: .email, email: "ada@example.com", create: false, secret: " pw ", timeout: 300)])
    }

    /// A client that goes away ends the stream, and that cancels the sign-in waiting for the
    /// user (for `login` and `account upgrade` with Google alike).
    @Test func droppingASignInStreamCancelsTheSignIn() async throws {
        var script = StubEngine.Script()
        script.loginSteps = [.userCode(verificationURI: "http://127.0.0.1:1/device", verificationURIComplete: nil, userCode: "ABCD", expiresIn: 600)]
        script.signInWaitsForTheUser = true
        let stub = StubbedHandler(script)
        for (index, line) in [
            #"{"op":"login","account":"corp","method":"device"}"#, #"{"op":"account","account":"work","action":"upgrade","method":"google"}"#,
        ].enumerated() {
            try await Self.readFirstLineThenHangUp(stub, line)
            let deadline = ContinuousClock.now + .seconds(30)
            while stub.engine.cancelledSignIns <= index, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
            #expect(stub.engine.cancelledSignIns == index + 1, "\(line)")
        }
    }

    /// Reads a stream's first line (the sign-in is under way), then drops the stream as a
    /// connection that closes does.
    static func readFirstLineThenHangUp(_ stub: StubbedHandler, _ line: String) async throws {
        guard case .stream(let stream) = await stub.reply(Array(line.utf8)) else { Issue.record("no stream: \(line)"); return }
        var lines = stream.makeAsyncIterator()
        guard case .progress(let first)? = await lines.next() else { Issue.record("no progress line: \(line)"); return }
        #expect(first.progress == .userCode && first.userCode == "ABCD")
    }

    @Test func accountActionsAskTheEngineForWhatTheyName() async {
        var script = StubEngine.Script()
        script.user = .success(ManagedUser(uid: "u1", providers: ["password"]))
        script.email = .success("ada@example.com")
        script.signIn = .success(LoginSummary(expiresAt: Self.expiry, signInProvider: "password"))
        script.deletion = .success(())
        let stub = StubbedHandler(script)
        let prefix = #"{"op":"account","account":"work","#
        #expect(await stub.respond(prefix + #""action":"show"}"#).user?.uid == "u1")
        #expect(await stub.respond(prefix + #""action":"verify_email","timeout":3}"#).email == "ada@example.com")
        #expect(await stub.respond(prefix + #""action":"reset_password","email":"  "}"#).email == "ada@example.com")
        let upgraded = await stub.respond(prefix + #""action":"upgrade","email":"ada@example.com","secret":"pw"}"#)
        #expect(upgraded.signInProvider == "password" && upgraded.expiresIn == 3600)
        let unconfirmed = await stub.respond(prefix + #""action":"delete"}"#)
        #expect(unconfirmed.error == TokendError(.badRequest, script.deletionDescription))
        #expect(await stub.respond(prefix + #""action":"delete","confirm":true}"#).ok)
        let google = await stub.stream(prefix + #""action":"upgrade","method":"google","timeout":90}"#)
        #expect(google.last.map { if case .response(let done) = $0 { done.progress == "done" } else { false } } == true)
        let github = await stub.stream(prefix + #""action":"upgrade","method":"idp","idp":"github.com","device":true,"timeout":90}"#)
        #expect(github.last.map { if case .response(let done) = $0 { done.progress == "done" } else { false } } == true)
        #expect(stub.engine.calls == [
            .showUser(account: "work", timeout: 30), .sendVerificationEmail(account: "work", timeout: 3),
            .sendPasswordReset(account: "work", email: nil), .upgrade(account: "work", email: "ada@example.com", password: "pw", timeout: 30),
            .describeDeletion(account: "work"), .deleteUser(account: "work", timeout: 30), .upgradeWithIdentityProvider(account: "work", id: "google.com", device: false, timeout: 90),
            .upgradeWithIdentityProvider(account: "work", id: "github.com", device: true, timeout: 90),
        ])
    }
}
