import Foundation
import Testing
import TokendCore
import TokendFakes
import TokendTestSupport

#if canImport(Glibc)
import Glibc
#endif

// The fake's own tests. They talk to it over a raw socket rather than an HTTP library, so that
// what a fault does on the wire (a reset, a half body, silence) is seen exactly, not as some
// client's interpretation of it.

@Suite("FakeFirebase")
struct FakeFirebaseTests {
    // MARK: - Refresh answers

    /// The fake's TOTP (what its `mfaSignIn` and `mfaEnrollment` check codes with, and tests
    /// compute codes with) against RFC 6238 Appendix B's SHA-1 vectors (8 digits; 6 are the
    /// same number mod 10^6), and the base32 of RFC 4648 §10.
    @Test(arguments: [
        (59.0, "94287082"), (1_111_111_109, "07081804"), (1_111_111_111, "14050471"), (1_234_567_890, "89005924"),
        (2_000_000_000, "69279037"), (20_000_000_000, "65353130"),
    ])
    func totpMatchesRFC6238(_ time: Double, _ expected: String) {
        let secret = Array("12345678901234567890".utf8)
        let at = Date(timeIntervalSince1970: time)
        #expect(TOTP.code(secret: secret, at: at, digits: 8) == expected)
        #expect(TOTP.code(secret: secret, at: at) == String(expected.suffix(6)))
        #expect(TOTP.code(base32Secret: TOTP.base32(secret), at: at) == String(expected.suffix(6)))
    }

    @Test func base32IsRFC4648s() {
        #expect(TOTP.base32(Array("foobar".utf8)) == "MZXW6YTBOI")
        #expect(TOTP.base32(Array("12345678901234567890".utf8)) == "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ")
        #expect(TOTP.code(base32Secret: "not base32!", at: Date()) == nil)
    }

    @Test func refreshAnswerHasProductionShape() async throws {
        try await withFake { fake in
            let session = fake.createUser(email: "ada@example.com", password: "secret-1")
            let answer = try await refresh(fake, session.refreshToken).answer()
            #expect(answer.status == 200)
            #expect(answer.headers["content-type"]?.hasPrefix("application/json") == true)
            let body = try answer.object()
            #expect(body["expires_in"] as? String == "3600")
            #expect(body["token_type"] as? String == "Bearer")
            #expect(body["user_id"] as? String == session.uid)
            #expect(body["project_id"] as? String == "123456789012")
            let idToken = try #require(body["id_token"] as? String)
            #expect(body["access_token"] as? String == idToken)
            #expect(body["refresh_token"] as? String == session.refreshToken)
            #expect(idToken != session.idToken)
        }
    }

    @Test func idTokenIsAnUnsignedJWTWithFirebaseClaims() async throws {
        let clock = ManualClock()
        try await withFake({ $0.lifetime = 600; $0.clock = clock }) { fake in
            let signedInAt = Int(clock.now().timeIntervalSince1970)
            let session = fake.createUser(email: "ada@example.com", password: "secret-1")
            #expect(session.expiresAt == clock.now().addingTimeInterval(600))
            clock.advance(by: 100)
            let body = try await refresh(fake, session.refreshToken).answer().object()
            let idToken = try #require(body["id_token"] as? String)

            let parts = idToken.split(separator: ".", omittingEmptySubsequences: false)
            try #require(parts.count == 3)
            #expect(parts[2].isEmpty)
            let header = try jsonObject(#require(JWTClaims.base64URLDecode(parts[0])))
            #expect(header["alg"] as? String == "none")
            #expect(header["typ"] as? String == "JWT")

            let claims = try jsonObject(#require(JWTClaims.base64URLDecode(parts[1])))
            #expect(claims["iss"] as? String == "https://securetoken.google.com/demo-tokend")
            #expect(claims["aud"] as? String == "demo-tokend")
            #expect(claims["sub"] as? String == session.uid)
            #expect(claims["user_id"] as? String == session.uid)
            #expect(claims["email"] as? String == "ada@example.com")
            let iat = try #require(claims["iat"] as? Int)
            let exp = try #require(claims["exp"] as? Int)
            #expect(iat == signedInAt + 100)
            #expect(exp - iat == 600)
            #expect(claims["auth_time"] as? Int == signedInAt)
            let firebase = try #require(claims["firebase"] as? [String: Any])
            #expect(firebase["sign_in_provider"] as? String == "password")
            #expect((firebase["identities"] as? [String: [String]])?["email"] == ["ada@example.com"])

            // TokendCore reads the same token the way the daemon will.
            let decoded = try #require(JWTClaims(token: idToken))
            #expect(decoded.expiresAt == Date(timeIntervalSince1970: Double(exp)))
            #expect(fake.requests.last?.issuedExpiresAt == decoded.expiresAt)
        }
    }

    @Test func everyMintedIDTokenIsUnique() async throws {
        let clock = ManualClock()  // frozen: same iat for all, so only the nonce tells them apart
        try await withFake({ $0.clock = clock }) { fake in
            let session = fake.createUser()
            var seen: Set<String> = [session.idToken]
            for _ in 0..<3 {
                let body = try await refresh(fake, session.refreshToken).answer().object()
                let idToken = try #require(body["id_token"] as? String)
                #expect(seen.insert(idToken).inserted)
            }
        }
    }

    @Test(arguments: [
        #"{"grantType":"refresh_token","refreshToken":"RT"}"#,
        #"{"grant_type":"refresh_token","refresh_token":"RT"}"#,
    ])
    func jsonBodiesAreAccepted(template: String) async throws {
        try await withFake { fake in
            let session = fake.createUser()
            let json = template.replacingOccurrences(of: "RT", with: session.refreshToken)
            let answer = try await post(fake, tokenPath, body: json, contentType: "application/json").answer()
            #expect(answer.status == 200)
            #expect(try answer.object()["user_id"] as? String == session.uid)
            #expect(fake.requests.last?.grantType == "refresh_token")
            #expect(fake.requests.last?.presentedRefreshToken == session.refreshToken)
        }
    }

    @Test func jsonBodyWithoutContentTypeIsRecognised() async throws {
        try await withFake { fake in
            let session = fake.createUser()
            let json = #"{"grantType":"refresh_token","refreshToken":"\#(session.refreshToken)"}"#
            let answer = try await post(fake, tokenPath, body: json, contentType: nil).answer()
            #expect(answer.status == 200)
        }
    }

    // MARK: - Rotation

    @Test func withoutRotationTheSameRefreshTokenComesBack() async throws {
        try await withFake { fake in
            let session = fake.createUser()
            for _ in 0..<2 {
                let body = try await refresh(fake, session.refreshToken).answer().object()
                #expect(body["refresh_token"] as? String == session.refreshToken)
            }
            #expect(fake.newestRefreshToken(uid: session.uid) == session.refreshToken)
            #expect(fake.requests.allSatisfy { !$0.rotated })
        }
    }

    @Test func rotationIssuesANewTokenAndKeepsOldOnesWorking() async throws {
        try await withFake { fake in
            let session = fake.createUser()
            fake.update { $0.rotate = true }
            let second = try #require(try await refresh(fake, session.refreshToken).answer().object()["refresh_token"] as? String)
            #expect(second != session.refreshToken)
            #expect(second.count >= 40)
            #expect(second.allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" })
            #expect(fake.requests.last?.rotated == true)

            let third = try await refresh(fake, session.refreshToken).answer()
            #expect(third.status == 200)
            let thirdToken = try #require(try third.object()["refresh_token"] as? String)
            #expect(fake.newestRefreshToken(uid: session.uid) == thirdToken)
        }
    }

    @Test func revokePreviousKillsTheReplacedToken() async throws {
        try await withFake({ $0.rotate = true; $0.revokePrevious = true }) { fake in
            let session = fake.createUser()
            let second = try #require(try await refresh(fake, session.refreshToken).answer().object()["refresh_token"] as? String)

            let stale = try await refresh(fake, session.refreshToken).answer()
            #expect(stale.status == 400)
            #expect(try errorMessage(stale) == "INVALID_REFRESH_TOKEN")

            let fresh = try await refresh(fake, second).answer()
            #expect(fresh.status == 200)
            #expect(try fresh.object()["refresh_token"] as? String != second)
        }
    }

    /// Reuse detection (RFC 9700 §4.14.2, django-oauth-toolkit's REFRESH_TOKEN_REUSE_PROTECTION):
    /// presenting a rotated-away token again ends the whole family, the newest token included.
    @Test func reuseOfAReplacedTokenRevokesTheFamily() async throws {
        try await withFake({ $0.rotate = true; $0.revokePrevious = true; $0.revokeFamilyOnReuse = true }) { fake in
            let session = fake.createUser()
            let second = try #require(try await refresh(fake, session.refreshToken).answer().object()["refresh_token"] as? String)

            let reused = try await refresh(fake, session.refreshToken).answer()
            #expect(reused.status == 400)
            #expect(try errorMessage(reused) == "INVALID_REFRESH_TOKEN")

            let newest = try await refresh(fake, second).answer()
            #expect(newest.status == 400)
            #expect(try errorMessage(newest) == "TOKEN_EXPIRED")
        }
    }

    // MARK: - Error envelopes

    enum Ending: String, CaseIterable, Sendable {
        case revoked, disabled, deleted, unknownToken
    }

    @Test(arguments: Ending.allCases)
    func endedSessionsAnswerTheirFirebaseCode(ending: Ending) async throws {
        try await withFake { fake in
            let session = fake.createUser()
            var presented = session.refreshToken
            let expected: String
            switch ending {
            case .revoked: fake.revokeTokens(session.uid); expected = "TOKEN_EXPIRED"
            case .disabled: fake.disableUser(session.uid); expected = "USER_DISABLED"
            case .deleted: fake.deleteUser(session.uid); expected = "USER_NOT_FOUND"
            case .unknownToken: presented = "never-issued-" + String(repeating: "x", count: 40); expected = "INVALID_REFRESH_TOKEN"
            }
            let answer = try await refresh(fake, presented).answer()
            #expect(answer.status == 400)
            let error = try #require(try answer.object()["error"] as? [String: Any])
            #expect(error["code"] as? Int == 400)
            #expect(error["message"] as? String == expected)
            #expect(error["status"] as? String == "INVALID_ARGUMENT")
            #expect(fake.requests.last?.errorCode == expected)
            #expect(fake.requests.last?.issuedRefreshToken == nil)
        }
    }

    @Test func aNewSignInWorksAfterRevocation() async throws {
        try await withFake { fake in
            let first = fake.createUser(email: "ada@example.com", password: "secret-1")
            fake.revokeTokens(first.uid)
            let again = fake.createUser(email: "ada@example.com", password: "secret-1")
            #expect(again.uid == first.uid)
            #expect(await refresh(fake, again.refreshToken).status == 200)
            #expect(await refresh(fake, first.refreshToken).status == 400)
        }
    }

    @Test func malformedRefreshRequestsAnswerTheirCodes() async throws {
        try await withFake { fake in
            let session = fake.createUser()
            let missing = try await post(fake, tokenPath, body: "grant_type=refresh_token").answer()
            #expect(try errorMessage(missing) == "MISSING_REFRESH_TOKEN")
            let wrongGrant = try await post(
                fake, tokenPath, body: "grant_type=authorization_code&refresh_token=\(session.refreshToken)"
            ).answer()
            #expect(wrongGrant.status == 400)
            #expect(try errorMessage(wrongGrant) == "INVALID_GRANT_TYPE")
        }
    }

    @Test func invalidAPIKeyIs400WithErrorInfoReason() async throws {
        try await withFake { fake in
            let session = fake.createUser()
            let answer = try await refresh(fake, session.refreshToken, key: "invalid-key").answer()
            #expect(answer.status == 400)
            let error = try #require(try answer.object()["error"] as? [String: Any])
            #expect(error["message"] as? String == "API key not valid. Please pass a valid API key.")
            #expect(error["status"] as? String == "INVALID_ARGUMENT")
            let details = try #require(error["details"] as? [[String: Any]])
            #expect(details.first?["@type"] as? String == "type.googleapis.com/google.rpc.ErrorInfo")
            #expect(details.first?["reason"] as? String == "API_KEY_INVALID")
            #expect(details.first?["domain"] as? String == "googleapis.com")
        }
    }

    @Test func configuredBadKeysAreRejectedToo() async throws {
        try await withFake({ $0.invalidAPIKeys = ["AIza-revoked"] }) { fake in
            let session = fake.createUser()
            #expect(await refresh(fake, session.refreshToken, key: "AIza-revoked").status == 400)
            #expect(await refresh(fake, session.refreshToken, key: "invalid-key").status == 200)
        }
    }

    @Test func missingAPIKeyIs403PermissionDenied() async throws {
        try await withFake { fake in
            let session = fake.createUser()
            let answer = try await refresh(fake, session.refreshToken, key: nil).answer()
            #expect(answer.status == 403)
            let error = try #require(try answer.object()["error"] as? [String: Any])
            #expect(error["code"] as? Int == 403)
            #expect(error["status"] as? String == "PERMISSION_DENIED")
            #expect((error["message"] as? String)?.hasPrefix("Method doesn't allow unregistered callers") == true)
        }
    }

    // MARK: - Faults that answer

    @Test func statusFaultSendsRetryAfterAndThenStops() async throws {
        try await withFake { fake in
            let session = fake.createUser()
            fake.faults.inject(.status(503, retryAfter: 7), count: 2)
            for _ in 0..<2 {
                let answer = try await refresh(fake, session.refreshToken).answer()
                #expect(answer.status == 503)
                #expect(answer.headers["retry-after"] == "7")
                let error = try #require(try answer.object()["error"] as? [String: Any])
                #expect(error["status"] as? String == "UNAVAILABLE")
            }
            #expect(await refresh(fake, session.refreshToken).status == 200)
            #expect(fake.requests.map(\.status) == [503, 503, 200])
            #expect(fake.requests.map(\.fault) == [.status(503, retryAfter: 7), .status(503, retryAfter: 7), nil])
        }
    }

    @Test func statusFaultWithoutRetryAfterHasNoHeaderAndKeepsACustomBody() async throws {
        try await withFake { fake in
            let session = fake.createUser()
            fake.faults.inject(.status(502, body: "<html>bad gateway</html>"), count: 1)
            let answer = try await refresh(fake, session.refreshToken).answer()
            #expect(answer.status == 502)
            #expect(answer.headers["retry-after"] == nil)
            #expect(String(decoding: answer.body, as: UTF8.self) == "<html>bad gateway</html>")
        }
    }

    @Test func firebaseErrorFaultUsesGooglesEnvelope() async throws {
        try await withFake { fake in
            let session = fake.createUser()
            fake.faults.inject(.firebaseError("TOO_MANY_ATTEMPTS_TRY_LATER : Too many requests"), count: 1)
            let answer = try await refresh(fake, session.refreshToken).answer()
            #expect(answer.status == 400)
            #expect(try errorMessage(answer) == "TOO_MANY_ATTEMPTS_TRY_LATER : Too many requests")
            #expect(fake.requests.last?.errorCode == "TOO_MANY_ATTEMPTS_TRY_LATER")
        }
    }

    @Test func oauthErrorFaultUsesRFC6749Body() async throws {
        try await withFake { fake in
            let session = fake.createUser()
            fake.faults.inject(.oauthError("invalid_grant"), count: 1)
            let answer = try await refresh(fake, session.refreshToken).answer()
            #expect(answer.status == 400)
            let body = try answer.object()
            #expect(body["error"] as? String == "invalid_grant")
            #expect(body["error_description"] is String)
        }
    }

    @Test func malformedJSONFaultIs200WithoutJSON() async throws {
        try await withFake { fake in
            let session = fake.createUser()
            fake.faults.inject(.malformedJSON, count: 1)
            let answer = try await refresh(fake, session.refreshToken).answer()
            #expect(answer.status == 200)
            #expect((try? JSONSerialization.jsonObject(with: Data(answer.body))) == nil)
        }
    }

    @Test func missingFieldsFaultOmitsTheTokens() async throws {
        try await withFake { fake in
            let session = fake.createUser()
            fake.faults.inject(.missingFields, count: 1)
            let answer = try await refresh(fake, session.refreshToken).answer()
            #expect(answer.status == 200)
            let body = try answer.object()
            #expect(body["id_token"] == nil)
            #expect(body["access_token"] == nil)
            #expect(body["expires_in"] == nil)
        }
    }

    // MARK: - Faults that do not answer

    @Test func refuseResetsBeforeAnyByteIsSent() async throws {
        try await withFake { fake in
            let session = fake.createUser()
            fake.faults.inject(.refuse, count: 1)
            let outcome = await refresh(fake, session.refreshToken)
            switch outcome {
            case .reset(let received), .closedEarly(let received): #expect(received.isEmpty)
            default: Issue.record("expected the connection to be reset, got \(outcome)")
            }
            let logged = try #require(fake.requests.last)
            #expect(logged.fault == .refuse)
            #expect(logged.status == nil)
            #expect(await refresh(fake, session.refreshToken).status == 200)
        }
    }

    @Test func dropClosesWithoutAnswering() async throws {
        try await withFake { fake in
            let session = fake.createUser()
            fake.faults.inject(.drop, count: 1)
            let outcome = await refresh(fake, session.refreshToken)
            guard case .closedEarly(let received) = outcome else {
                Issue.record("expected a close without an answer, got \(outcome)")
                return
            }
            #expect(received.isEmpty)
            #expect(fake.requests.last?.status == nil)
            #expect(fake.requests.last?.presentedRefreshToken == session.refreshToken)
        }
    }

    @Test func dropMidResponseSendsHalfTheBody() async throws {
        try await withFake { fake in
            let session = fake.createUser()
            fake.faults.inject(.dropMidResponse, count: 1)
            let outcome = await refresh(fake, session.refreshToken)
            guard case .closedEarly(let received) = outcome else {
                Issue.record("expected the response to be cut off, got \(outcome)")
                return
            }
            let partial = try #require(PartialResponse(received))
            #expect(partial.status == 200)
            let announced = try #require(partial.headers["content-length"].flatMap { Int($0) })
            #expect(partial.body.count > 0)
            #expect(partial.body.count < announced)
            #expect(fake.requests.last?.status == nil)
        }
    }

    @Test func trickleSendsTheHeadThenTheBodyPartWay() async throws {
        try await withFake { fake in
            let session = fake.createUser()
            fake.faults.inject(.trickle, count: 1)
            // Each byte comes well within a read timeout; the client stops after a few of them, as
            // the whole answer would take minutes.
            let outcome = await refresh(fake, session.refreshToken, stopAfterBodyBytes: 3)
            guard case .stoppedReading(let received) = outcome else {
                Issue.record("expected an unfinished answer, got \(outcome)")
                return
            }
            #expect(received.starts(with: Array("HTTP/1.1 200 OK\r\n".utf8)))
            let partial = try #require(PartialResponse(received))
            let announced = try #require(partial.headers["content-length"].flatMap { Int($0) })
            #expect(partial.body.count < announced)
            #expect(fake.requests.last?.fault == .trickle)
            #expect(fake.requests.last?.status == nil)
        }
    }

    @Test func aStatusFaultsReplyHasExactlyItsHeadersAndEnvelope() async throws {
        try await withFake { fake in
            fake.faults.inject(.status(503, retryAfter: 7), count: 1)
            let outcome = await refresh(fake, "any-token")
            let answer = try outcome.answer()
            #expect(answer.status == 503)
            #expect(answer.headers["retry-after"] == "7")
            #expect(answer.headers["content-type"] == "application/json; charset=UTF-8")
            #expect(answer.headers["connection"] == "close", "asked for by the client")
            #expect(answer.headers["transfer-encoding"] == nil, "a plain Content-Length body")
            let body = try answer.object()
            let error = try #require(body["error"] as? [String: Any])
            #expect(error["code"] as? Int == 503)
            #expect(error["status"] as? String == "UNAVAILABLE")
            #expect(error["message"] as? String == "Service Unavailable")
        }
    }

    @Test func hangNeverAnswersAndLaterRequestsStillWork() async throws {
        try await withFake { fake in
            let session = fake.createUser()
            fake.faults.inject(.hang, count: 1)
            // The client gives up after a short wait; the assertion is on silence, not on time.
            let outcome = await refresh(fake, session.refreshToken, timeout: 0.5)
            guard case .timedOut(let received) = outcome else {
                Issue.record("expected no answer, got \(outcome)")
                return
            }
            #expect(received.isEmpty)
            #expect(await fake.waitForRequests(count: 1, timeout: 10))
            #expect(fake.requests.first?.fault == .hang)
            #expect(fake.requests.first?.status == nil)
            #expect(await refresh(fake, session.refreshToken).status == 200)
        }
    }

    // MARK: - Fault bookkeeping

    @Test func faultsForSecondsLastUntilTheWindowCloses() async throws {
        let clock = ManualClock()
        try await withFake({ $0.clock = clock }) { fake in
            let session = fake.createUser()
            fake.faults.inject(.status(429, retryAfter: 1), forSeconds: 30)
            #expect(await refresh(fake, session.refreshToken).status == 429)
            clock.advance(by: 29)
            #expect(await refresh(fake, session.refreshToken).status == 429)
            clock.advance(by: 2)
            #expect(await refresh(fake, session.refreshToken).status == 200)
        }
    }

    @Test func clearFaultsEndsAWindowEarly() async throws {
        try await withFake { fake in
            let session = fake.createUser()
            fake.faults.inject(.status(500), forSeconds: 600)
            #expect(await refresh(fake, session.refreshToken).status == 500)
            fake.faults.clear()
            #expect(await refresh(fake, session.refreshToken).status == 200)
        }
    }

    @Test func injectionsQueueInOrder() async throws {
        try await withFake { fake in
            let session = fake.createUser()
            fake.faults.inject(.status(500), count: 1)
            fake.faults.inject(.firebaseError("TOO_MANY_ATTEMPTS_TRY_LATER"), count: 2)
            var statuses: [Int] = []
            for _ in 0..<4 { statuses.append(try await refresh(fake, session.refreshToken).answer().status) }
            #expect(statuses == [500, 400, 400, 200])
        }
    }

    @Test func faultsDoNotRotateOrRevoke() async throws {
        try await withFake({ $0.rotate = true; $0.revokePrevious = true }) { fake in
            let session = fake.createUser()
            fake.faults.inject(.status(503), count: 1)
            fake.faults.inject(.firebaseError("TOKEN_EXPIRED"), count: 1)
            fake.faults.inject(.drop, count: 1)
            fake.faults.inject(.dropMidResponse, count: 1)
            fake.faults.inject(.missingFields, count: 1)
            for _ in 0..<5 { _ = await refresh(fake, session.refreshToken) }
            #expect(await fake.waitForRequests(count: 5, timeout: 10))
            #expect(fake.requests.allSatisfy { $0.fault != nil && $0.issuedRefreshToken == nil })
            #expect(fake.newestRefreshToken(uid: session.uid) == session.refreshToken)

            let real = try await refresh(fake, session.refreshToken).answer()
            #expect(real.status == 200)
            #expect(try real.object()["refresh_token"] as? String != session.refreshToken)
        }
    }

    @Test func signInsAndControlRequestsDoNotTakeFaults() async throws {
        try await withFake { fake in
            fake.faults.inject(.status(503), count: 1)
            let signUp = try await post(fake, identityPath("signUp"), body: "{}", contentType: "application/json").answer()
            #expect(signUp.status == 200)
            #expect(await control(fake, "GET", "/_fake/requests").status == 200)
            let refreshToken = try #require(try signUp.object()["refreshToken"] as? String)
            #expect(await refresh(fake, refreshToken).status == 503)
        }
    }

    // MARK: - Request log

    @Test func requestLogRecordsWhatWasPresentedAndIssued() async throws {
        try await withFake({ $0.rotate = true }) { fake in
            let session = fake.createUser()
            let body = try await refresh(fake, session.refreshToken).answer().object()
            _ = try await refresh(fake, "bogus-token").answer()
            _ = try await control(fake, "GET", "/_fake/options").answer()

            let log = fake.requests
            try #require(log.count == 2)
            let first = log[0]
            #expect(first.method == "POST")
            #expect(first.path == "/securetoken.googleapis.com/v1/token")
            #expect(first.grantType == "refresh_token")
            #expect(first.presentedRefreshToken == session.refreshToken)
            #expect(first.status == 200)
            #expect(first.uid == session.uid)
            #expect(first.issuedRefreshToken == body["refresh_token"] as? String)
            #expect(first.issuedIDToken == body["id_token"] as? String)
            #expect(first.issuedExpiresAt != nil)
            #expect(first.fault == nil)
            #expect(first.rotated)
            let second = log[1]
            #expect(second.status == 400)
            #expect(second.errorCode == "INVALID_REFRESH_TOKEN")
            #expect(second.issuedIDToken == nil)
        }
    }

    @Test func waitForRequestsWakesOnTheLogAndTimesOutWithout() async throws {
        try await withFake { fake in
            #expect(await fake.waitForRequests(count: 1, timeout: 0.05) == false)
            let session = fake.createUser()
            async let waited = fake.waitForRequests(count: 2, timeout: Patience.seconds)
            _ = await refresh(fake, session.refreshToken)
            _ = await refresh(fake, session.refreshToken)
            #expect(await waited)
            #expect(await fake.waitForRequests(count: 2, timeout: 0))
        }
    }

    @Test func latencyStillAnswers() async throws {
        try await withFake({ $0.latency = 0.05 }) { fake in
            let session = fake.createUser()
            #expect(await refresh(fake, session.refreshToken).status == 200)
        }
    }

    // MARK: - Sign-in

    @Test func anonymousSignUpGivesARefreshableSession() async throws {
        try await withFake { fake in
            for body in ["", #"{"returnSecureToken":true}"#] {
                let answer = try await post(fake, identityPath("signUp"), body: body, contentType: "application/json").answer()
                #expect(answer.status == 200)
                let object = try answer.object()
                #expect(object["expiresIn"] as? String == "3600")
                #expect(object["localId"] is String)
                #expect(object["idToken"] is String)
                let refreshToken = try #require(object["refreshToken"] as? String)
                let refreshed = try await refresh(fake, refreshToken).answer()
                #expect(try refreshed.object()["user_id"] as? String == object["localId"] as? String)
            }
        }
    }

    @Test func passwordSignUpThenSignIn() async throws {
        try await withFake { fake in
            let credentials = #"{"email":"ada@example.com","password":"secret-1","returnSecureToken":true}"#
            let signUp = try await post(fake, identityPath("signUp"), body: credentials, contentType: "application/json").answer()
            #expect(signUp.status == 200)
            let uid = try #require(try signUp.object()["localId"] as? String)
            #expect(try signUp.object()["email"] as? String == "ada@example.com")

            let again = try await post(fake, identityPath("signUp"), body: credentials, contentType: "application/json").answer()
            #expect(try errorMessage(again) == "EMAIL_EXISTS")

            let signIn = try await post(
                fake, identityPath("signInWithPassword"), body: credentials, contentType: "application/json"
            ).answer()
            #expect(signIn.status == 200)
            let object = try signIn.object()
            #expect(object["localId"] as? String == uid)
            #expect(object["registered"] as? Bool == true)
            #expect(object["refreshToken"] as? String != nil)
            #expect(fake.requests.last?.issuedRefreshToken == object["refreshToken"] as? String)
            #expect(fake.newestRefreshToken(uid: uid) == object["refreshToken"] as? String)
        }
    }

    @Test(arguments: [
        #"{"email":"ada@example.com","password":"wrong-password"}"#,
        #"{"email":"nobody@example.com","password":"secret-1"}"#,
    ])
    func badCredentialsAreIndistinguishable(body: String) async throws {
        try await withFake { fake in
            _ = fake.createUser(email: "ada@example.com", password: "secret-1")
            let answer = try await post(fake, identityPath("signInWithPassword"), body: body, contentType: "application/json").answer()
            #expect(answer.status == 400)
            #expect(try errorMessage(answer) == "INVALID_LOGIN_CREDENTIALS")
        }
    }

    @Test func customTokenSignInNamesOrCreatesTheUser() async throws {
        try await withFake { fake in
            let first = try await post(
                fake, identityPath("signInWithCustomToken"), body: #"{"token":"user-42"}"#, contentType: "application/json"
            ).answer().object()
            #expect(first["localId"] as? String == "user-42")
            #expect(first["isNewUser"] as? Bool == true)
            #expect(first["expiresIn"] as? String == "3600")

            let claims = JWTClaims.base64URLEncode(Data(#"{"uid":"user-42"}"#.utf8))
            let jwt = "eyJhbGciOiJub25lIn0.\(claims)."
            let second = try await post(
                fake, identityPath("signInWithCustomToken"), body: #"{"token":"\#(jwt)"}"#, contentType: "application/json"
            ).answer().object()
            #expect(second["localId"] as? String == "user-42")
            #expect(second["isNewUser"] as? Bool == false)
        }
    }

    // MARK: - Second factors (issue 44, item 9)

    /// Production's codes where the fake used invented ones: finalize without a pending
    /// credential (emulator `mfaSignInFinalize`: `MISSING_CREDENTIAL`), a start without
    /// `totpEnrollmentInfo` and an enrollment finalize without `displayName` (a recording of
    /// production: `Request contains an invalid argument.`, `MISSING_DISPLAY_NAME`).
    @Test func secondFactorCallsAnswerProductionsCodes() async throws {
        try await withFake({ $0.totpEnabled = true }) { fake in
            let v2 = "/identitytoolkit.googleapis.com/v2/accounts/"
            let missing = try await post(fake, v2 + "mfaSignIn:finalize", body: "{}", contentType: "application/json").answer()
            #expect(try errorMessage(missing) == "MISSING_CREDENTIAL : Please set MFA Pending Credential.")

            let session = fake.createUser(email: "mo@example.com", password: "secret-1")
            fake.confirmEmailVerification(session.uid)
            let bare = try await post(fake, v2 + "mfaEnrollment:start", body: #"{"idToken":"\#(session.idToken)"}"#, contentType: "application/json").answer()
            #expect(try errorMessage(bare) == "Request contains an invalid argument.")
            let started = try await post(
                fake, v2 + "mfaEnrollment:start", body: #"{"idToken":"\#(session.idToken)","totpEnrollmentInfo":{}}"#, contentType: "application/json"
            ).answer().object()
            let info = try #require(started["totpSessionInfo"] as? [String: Any])
            let secret = try #require(info["sharedSecretKey"] as? String)
            let sessionInfo = try #require(info["sessionInfo"] as? String)
            let code = try #require(TOTP.code(base32Secret: secret, at: Date()))
            let unnamed = try await post(
                fake, v2 + "mfaEnrollment:finalize",
                body: #"{"idToken":"\#(session.idToken)","totpVerificationInfo":{"sessionInfo":"\#(sessionInfo)","verificationCode":"\#(code)"}}"#,
                contentType: "application/json"
            ).answer()
            #expect(try errorMessage(unnamed) == "MISSING_DISPLAY_NAME")
            #expect(fake.secondFactors(of: session.uid).isEmpty)
        }
    }

    /// Identity Platform's `adjacentIntervals` defaults to 5: a code 4 steps old still signs in,
    /// one 7 steps old does not (a step either way of slack for the test's own timing).
    @Test(arguments: [(-120.0, true), (-210.0, false), (120.0, true)])
    func totpCodesAreAcceptedWithinAdjacentIntervals(_ offset: Double, _ accepted: Bool) async throws {
        try await withFake { fake in
            let uid = fake.createUser(email: "ada@example.com", password: "secret-1").uid
            let totp = fake.enrollTOTP(uid)
            let first = try await post(
                fake, identityPath("signInWithPassword"), body: #"{"email":"ada@example.com","password":"secret-1"}"#, contentType: "application/json"
            ).answer().object()
            let pending = try #require(first["mfaPendingCredential"] as? String)
            let code = try #require(TOTP.code(base32Secret: totp.secret, at: Date().addingTimeInterval(offset)))
            let answer = try await post(
                fake, "/identitytoolkit.googleapis.com/v2/accounts/mfaSignIn:finalize",
                body: #"{"mfaPendingCredential":"\#(pending)","mfaEnrollmentId":"\#(totp.id)","totpVerificationInfo":{"verificationCode":"\#(code)"}}"#,
                contentType: "application/json"
            ).answer()
            #expect(answer.status == (accepted ? 200 : 400), "\(String(decoding: answer.body, as: UTF8.self))")
        }
    }

    // MARK: - Control plane

    @Test func controlPlaneDrivesUsersOptionsAndFaults() async throws {
        try await withFake { fake in
            let created = try await control(fake, "POST", "/_fake/users", #"{"email":"ada@example.com","password":"secret-1"}"#)
                .answer().object()
            let uid = try #require(created["uid"] as? String)
            let refreshToken = try #require(created["refresh_token"] as? String)
            #expect(created["id_token"] is String)
            #expect(created["expires_in"] as? Int == 3600)

            let newest = try await control(fake, "GET", "/_fake/users/\(uid)/refresh_token").answer().object()
            #expect(newest["refresh_token"] as? String == refreshToken)

            let options = try await control(fake, "POST", "/_fake/options", #"{"rotate":true,"lifetime":120,"totp_enabled":true}"#).answer()
            #expect(try options.object()["rotate"] as? Bool == true)
            #expect(try options.object()["totp_enabled"] as? Bool == true)
            #expect(fake.options.totpEnabled)
            #expect(fake.options.lifetime == 120)
            let rotated = try await refresh(fake, refreshToken).answer().object()
            #expect(rotated["expires_in"] as? String == "120")
            let next = try await control(fake, "GET", "/_fake/users/\(uid)/refresh_token").answer().object()
            #expect(next["refresh_token"] as? String == rotated["refresh_token"] as? String)

            let injected = try await control(fake, "POST", "/_fake/faults", #"{"fault":"status","status":503,"retry_after":5,"count":1}"#)
                .answer()
            #expect(injected.status == 200)
            let faulted = try await refresh(fake, refreshToken).answer()
            #expect(faulted.status == 503)
            #expect(faulted.headers["retry-after"] == "5")

            _ = try await control(fake, "POST", "/_fake/faults", #"{"fault":"firebase_error","code":"TOKEN_EXPIRED","seconds":600}"#).answer()
            #expect(try await refreshError(fake, refreshToken) == "TOKEN_EXPIRED")
            #expect(await control(fake, "DELETE", "/_fake/faults").status == 200)
            #expect(await refresh(fake, refreshToken).status == 200)

            #expect(await control(fake, "POST", "/_fake/users/\(uid)/disable").status == 200)
            #expect(try await refreshError(fake, refreshToken) == "USER_DISABLED")

            let log = try await control(fake, "GET", "/_fake/requests").answer()
            let entries = try #require(try JSONSerialization.jsonObject(with: Data(log.body)) as? [[String: Any]])
            #expect(entries.count == fake.requests.count)
            #expect(entries.count == 5)  // refreshes only: control requests are not logged
            #expect(entries.first?["presented_refresh_token"] as? String == refreshToken)
            #expect(entries.first?["rotated"] as? Bool == true)
            let fault = try #require(entries[1]["fault"] as? [String: Any])
            #expect(fault["fault"] as? String == "status")
            #expect(fault["retry_after"] as? Int == 5)
        }
    }

    @Test func controlPlaneRevokesAndDeletes() async throws {
        try await withFake { fake in
            let revoked = fake.createUser()
            let deleted = fake.createUser()
            #expect(await control(fake, "POST", "/_fake/users/\(revoked.uid)/revoke").status == 200)
            #expect(await control(fake, "POST", "/_fake/users/\(deleted.uid)/delete").status == 200)
            let revokedError = try await refreshError(fake, revoked.refreshToken)
            let deletedError = try await refreshError(fake, deleted.refreshToken)
            #expect(revokedError == "TOKEN_EXPIRED")
            #expect(deletedError == "USER_NOT_FOUND")
        }
    }

    @Test func controlPlaneRefusesNonsense() async throws {
        try await withFake { fake in
            #expect(await control(fake, "POST", "/_fake/faults", #"{"fault":"meteor"}"#).status == 400)
            #expect(await control(fake, "POST", "/_fake/faults", #"{"fault":"status"}"#).status == 400)
            #expect(await control(fake, "POST", "/_fake/faults", #"{"fault":"drop","count":1,"seconds":2}"#).status == 400)
            #expect(await control(fake, "POST", "/_fake/users/no-such-user/disable").status == 404)
            #expect(await control(fake, "GET", "/_fake/users/no-such-user/refresh_token").status == 404)
            #expect(await control(fake, "PUT", "/_fake/requests").status == 405)
            #expect(await control(fake, "POST", "/_fake/options", "not json").status == 400)
            #expect(fake.requests.isEmpty)
        }
    }

    @Test func controlPlaneFaultKindsAllParse() async throws {
        try await withFake { fake in
            let kinds = [
                #"{"fault":"oauth_error","code":"invalid_grant"}"#, #"{"fault":"refuse"}"#, #"{"fault":"drop"}"#,
                #"{"fault":"drop_mid_response"}"#, #"{"fault":"hang"}"#, #"{"fault":"malformed_json"}"#,
                #"{"fault":"missing_fields"}"#,
            ]
            for kind in kinds {
                #expect(await control(fake, "POST", "/_fake/faults", kind).status == 200, "\(kind)")
            }
        }
    }

    // MARK: - Addresses and helpers

    @Test func emulatorHostNamesTheBoundPort() async throws {
        try await withFake { fake in
            #expect(fake.port > 0)
            #expect(fake.emulatorHost == "127.0.0.1:\(fake.port)")
        }
    }

    @Test func manualClockMovesOnlyWhenTold() async {
        let clock = ManualClock()
        #expect(clock.now() == Date(timeIntervalSince1970: 1_800_000_000))
        clock.advance(by: 90)
        #expect(clock.now() == Date(timeIntervalSince1970: 1_800_000_090))
        clock.set(Date(timeIntervalSince1970: 5))
        #expect(clock.now() == Date(timeIntervalSince1970: 5))

        // Many concurrent advances lose none (the Mutex is doing its job).
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<100 { group.addTask { clock.advance(by: 1) } }
        }
        #expect(clock.now() == Date(timeIntervalSince1970: 105))
    }

    @Test func temporaryDirectoryIsPrivateAndRemovable() throws {
        let directory = try TemporaryDirectory()
        let attributes = try FileManager.default.attributesOfItem(atPath: directory.path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o700)
        #expect(directory.url.path == directory.path)
        #expect(FileManager.default.createFile(atPath: directory.appending("file"), contents: Data("x".utf8)))
        try directory.remove()
        #expect(!FileManager.default.fileExists(atPath: directory.path))
        try directory.remove()  // already gone: not an error
    }
}

// MARK: - Test plumbing

private let tokenPath = "/securetoken.googleapis.com/v1/token"
private let testAPIKey = "AIza-test-key"

private func identityPath(_ method: String) -> String {
    "/identitytoolkit.googleapis.com/v1/accounts:\(method)"
}

/// Starts a fake, runs `body`, and always shuts the fake down.
private func withFake(
    _ configure: (inout FakeFirebase.Options) -> Void = { _ in }, _ body: (FakeFirebase) async throws -> Void
) async throws {
    var options = FakeFirebase.Options()
    configure(&options)
    let fake = try await FakeFirebase.start(options: options)
    do {
        try await body(fake)
    } catch {
        try await fake.shutdown()
        throw error
    }
    try await fake.shutdown()
}

/// A form-encoded refresh, as the JS SDK sends it.
private func refresh(
    _ fake: FakeFirebase, _ refreshToken: String, key: String? = testAPIKey, timeout: Double = 10, stopAfterBodyBytes: Int? = nil
) async -> Exchange {
    let target = tokenPath + (key.map { "?key=\($0)" } ?? "")
    return await RawHTTP.exchange(
        port: fake.port, method: "POST", target: target, body: "grant_type=refresh_token&refresh_token=\(refreshToken)",
        contentType: "application/x-www-form-urlencoded", timeout: timeout, stopAfterBodyBytes: stopAfterBodyBytes)
}

private func post(_ fake: FakeFirebase, _ path: String, body: String, contentType: String? = "application/x-www-form-urlencoded") async -> Exchange {
    await RawHTTP.exchange(
        port: fake.port, method: "POST", target: "\(path)?key=\(testAPIKey)", body: body, contentType: contentType, timeout: 10)
}

private func control(_ fake: FakeFirebase, _ method: String, _ path: String, _ body: String? = nil) async -> Exchange {
    await RawHTTP.exchange(
        port: fake.port, method: method, target: path, body: body ?? "", contentType: body == nil ? nil : "application/json",
        timeout: 10)
}

private func jsonObject(_ data: Data) throws -> [String: Any] {
    try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
}

/// Refreshes and answers `error.message` of the reply.
private func refreshError(_ fake: FakeFirebase, _ refreshToken: String) async throws -> String? {
    let answer = try await refresh(fake, refreshToken).answer()
    return try errorMessage(answer)
}

/// `error.message` of Google's envelope.
private func errorMessage(_ answer: HTTPAnswer) throws -> String? {
    let error = try #require(try answer.object()["error"] as? [String: Any])
    return error["message"] as? String
}

/// A complete HTTP response.
struct HTTPAnswer: Sendable {
    var status: Int
    /// Lower-cased names.
    var headers: [String: String]
    var body: [UInt8]

    func object() throws -> [String: Any] {
        try jsonObject(Data(body))
    }
}

/// What one exchange came to, byte-exact.
enum Exchange: Sendable, CustomStringConvertible {
    case response(HTTPAnswer)
    /// The server closed (FIN) before a complete response.
    case closedEarly(received: [UInt8])
    /// The server reset the connection (RST).
    case reset(received: [UInt8])
    /// Nothing more arrived before the client's timeout.
    case timedOut(received: [UInt8])
    /// The client stopped reading once it had seen enough of the body (`stopAfterBodyBytes`).
    case stoppedReading(received: [UInt8])
    case failed(String)

    /// The status of a complete response; nil for every way of not getting one.
    var status: Int? {
        guard case .response(let answer) = self else { return nil }
        return answer.status
    }

    func answer() throws -> HTTPAnswer {
        guard case .response(let answer) = self else {
            throw ExchangeError.noResponse(description)
        }
        return answer
    }

    var description: String {
        switch self {
        case .response(let answer): "response \(answer.status)"
        case .closedEarly(let received): "closed after \(received.count) bytes"
        case .reset(let received): "reset after \(received.count) bytes"
        case .timedOut(let received): "timed out after \(received.count) bytes"
        case .stoppedReading(let received): "stopped reading after \(received.count) bytes"
        case .failed(let why): "failed: \(why)"
        }
    }
}

enum ExchangeError: Error {
    case noResponse(String)
}

/// Head and whatever part of the body arrived.
struct PartialResponse {
    var status: Int
    var headers: [String: String]
    var body: [UInt8]

    init?(_ bytes: [UInt8]) {
        let separator: [UInt8] = Array("\r\n\r\n".utf8)
        guard let end = bytes.indices.first(where: { bytes[$0...].starts(with: separator) }) else { return nil }
        let lines = String(decoding: bytes[..<end], as: UTF8.self).components(separatedBy: "\r\n")
        let statusLine = lines.first?.split(separator: " ") ?? []
        guard statusLine.count >= 2, let status = Int(statusLine[1]) else { return nil }
        self.status = status
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        self.headers = headers
        body = Array(bytes[(end + separator.count)...])
    }

    /// Complete once the body reaches the announced Content-Length.
    var complete: HTTPAnswer? {
        guard let length = headers["content-length"].flatMap({ Int($0) }), body.count >= length else { return nil }
        return HTTPAnswer(status: status, headers: headers, body: Array(body.prefix(length)))
    }
}

/// One HTTP/1.1 request over a fresh blocking socket, on a thread of its own so the cooperative
/// pool is never blocked while a fault keeps the server silent.
enum RawHTTP {
    static func exchange(
        port: Int, method: String, target: String, body: String, contentType: String?, timeout: Double, stopAfterBodyBytes: Int? = nil
    ) async -> Exchange {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(returning: blockingExchange(
                    port: port, method: method, target: target, body: body, contentType: contentType, timeout: timeout,
                    stopAfterBodyBytes: stopAfterBodyBytes))
            }
        }
    }

    private static func blockingExchange(
        port: Int, method: String, target: String, body: String, contentType: String?, timeout: Double, stopAfterBodyBytes: Int?
    ) -> Exchange {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return .failed("socket: errno \(errno)") }
        defer { close(fd) }

        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else { return .failed("connect: errno \(errno)") }

        var deadline = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - timeout.rounded(.down)) * 1_000_000))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &deadline, socklen_t(MemoryLayout<timeval>.size))

        var request = "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
        if let contentType { request += "Content-Type: \(contentType)\r\n" }
        request += "Content-Length: \(body.utf8.count)\r\n\r\n\(body)"
        let bytes = Array(request.utf8)
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n < 0 { return errno == ECONNRESET || errno == EPIPE ? .reset(received: []) : .failed("send: errno \(errno)") }
            sent += n
        }

        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            if let answer = PartialResponse(received)?.complete { return .response(answer) }
            if let wanted = stopAfterBodyBytes, let partial = PartialResponse(received), partial.body.count >= wanted {
                return .stoppedReading(received: received)
            }
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n > 0 {
                received += buffer[..<n]
            } else if n == 0 {
                return .closedEarly(received: received)
            } else if errno == EAGAIN || errno == EWOULDBLOCK {
                return .timedOut(received: received)
            } else if errno == ECONNRESET {
                return .reset(received: received)
            } else if errno != EINTR {
                return .failed("recv: errno \(errno)")
            }
        }
    }
}
