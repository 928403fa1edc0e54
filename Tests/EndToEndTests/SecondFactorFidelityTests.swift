import Foundation
import Testing
import TokendCore
import TokendFakes
import TokendTestSupport

/// Issue 44: the second factor as production answers it (the rows of the fake's reference table,
/// FakeFirebase+IdentityToolkit.swift, each with its source), through the real tokenctl and
/// tokend against the fake (README, "Firebase": what `mfa enroll` needs): TOTP off until an
/// administrator enables it, who may enroll and when, the factor's name, the codes that mean
/// "sign in again", a custom token of another tenant, and sessions that survive an enrollment.
@Suite struct SecondFactorFidelityTests {
    static let password = SecondFactorTests.password

    /// An unsigned JWT custom token for `uid`, minted by a tenant's `TenantAwareAuth` when
    /// `tenant` is given (its `tenant_id` claim).
    static func customToken(uid: String, tenant: String? = nil) -> String {
        let claims = tenant.map { #"{"uid":"\#(uid)","tenant_id":"\#($0)"}"# } ?? #"{"uid":"\#(uid)"}"#
        return JWTClaims.base64URLEncode(Data(#"{"alg":"none","typ":"JWT"}"#.utf8)) + "." + JWTClaims.base64URLEncode(Data(claims.utf8)) + "."
    }

    /// Item 1: every project starts with TOTP off; tokenctl names the switch and both ways to
    /// turn it on (not the console), and enrollment works once it is on.
    @Test func totpIsOffUntilAnAdministratorEnablesIt() async throws {
        try await withWorld { world in
            let uid = try await FirebaseAccountTests().signUp(world, "oli@example.com", password: Self.password)
            world.fake.confirmEmailVerification(uid)
            let off = try await world.tokenctl(["account", "mfa", "enroll", "work", "--totp"], stdin: "123456\n")
            #expect(off.status == 78, "\(off.stderr)")
            #expect(off.stderr.contains("OPERATION_NOT_ALLOWED: TOTP second factors are not enabled for the project (TOTP based MFA not enabled.)"), "\(off.stderr)")
            #expect(off.stderr.contains("multiFactorConfig.providerConfigs") && off.stderr.contains("admin/v2/projects/PROJECT/config?updateMask=mfa"), "\(off.stderr)")
            #expect(!off.stderr.contains("Email/Password"), "\(off.stderr)")
            #expect(world.fake.secondFactors(of: uid).isEmpty)

            world.fake.update { $0.totpEnabled = true }
            let enrolled = try await SecondFactorTests.enroll(world)
            #expect(enrolled.status == 0, "\(enrolled.output)")
            #expect(world.fake.secondFactors(of: uid).count == 1)
        }
    }

    /// Item 6: the factor carries a display name (`--name`; the default "tokend on HOST" is
    /// SecondFactorTests' enrollment); sessions from a custom token (or anonymous) cannot
    /// enroll; a sign-in older than about 5 minutes is refused with what to do. And a second
    /// TOTP factor is refused (a recording of production, row 25).
    @Test func enrollmentIsNamedAndNeedsARecentPasswordOrProviderSignIn() async throws {
        try await withWorld { world in
            let uid = try await SecondFactorTests.verifiedUser(world, "pia@example.com")
            let bad = try await world.tokenctl(["account", "mfa", "enroll", "work", "--totp", "--name", ""])
            #expect(bad.status == 64, "\(bad.stderr)")

            // A sign-in older than the window (here: any), though refreshed since.
            world.fake.update { $0.enrollmentRecentSignInWindow = -1 }
            let stale = try await world.tokenctl(["account", "mfa", "enroll", "work", "--totp"], stdin: "123456\n")
            #expect(stale.status == 77, "\(stale.stderr)")
            #expect(stale.stderr.contains("CREDENTIAL_TOO_OLD_LOGIN_AGAIN: Firebase enrolls a second factor only within about 5 minutes of a sign-in"), "\(stale.stderr)")
            #expect(stale.stderr.contains("tokenctl login work") && stale.stderr.contains("tokenctl account mfa enroll work --totp"), "\(stale.stderr)")
            world.fake.update { $0.enrollmentRecentSignInWindow = 300 }

            let named = try await SecondFactorTests.enroll(world, name: "work laptop")
            #expect(named.status == 0, "\(named.output)")
            let listed = try await world.tokenctl(["account", "mfa", "list", "work"])
            #expect(listed.stdout.contains("  totp  work laptop  "), "\(listed.stdout)")
            let second = try await world.tokenctl(["account", "mfa", "enroll", "work", "--totp"], stdin: "123456\n")
            #expect(second.status == 64 && second.stderr.contains("SECOND_FACTOR_LIMIT_EXCEEDED"), "\(second.stderr)")

            // The same user through a custom token: Firebase skips its factors at sign-in but
            // will not let such a session enroll one.
            #expect(try await world.tokenctl(["login", "work", "--custom-token"], stdin: uid + "\n").status == 0)
            let custom = try await world.tokenctl(["account", "mfa", "enroll", "work", "--totp"], stdin: "123456\n")
            #expect(custom.status == 64, "\(custom.stderr)")
            #expect(custom.stderr.contains("UNSUPPORTED_FIRST_FACTOR") && custom.stderr.contains("email and password or an identity provider"), "\(custom.stderr)")
            #expect(!custom.stderr.contains("from a --custom-token session"), "\(custom.stderr)")
            #expect(world.fake.secondFactors(of: uid).count == 1)
        }
    }

    /// Item 9: an enrollment leaves the user's other sessions alone (emulator
    /// `mfaEnrollmentFinalize`, and a recording of production); withdrawing a factor that is
    /// not the newest answers a new session (only the newest ends it, item 5).
    @Test func enrollmentKeepsOtherSessionsAndWithdrawingAnOlderFactorRenewsTheSession() async throws {
        try await withWorld(accounts: ["work", "spare"]) { world in
            let uid = try await SecondFactorTests.verifiedUser(world, "ray@example.com")
            let spare = try await world.tokenctl(["login", "spare", "--email", "ray@example.com"], stdin: "\(Self.password)\n")
            #expect(spare.status == 0, "\(spare.stderr)")
            // An SMS factor added elsewhere first, then the TOTP one here: the newest.
            let sms = world.fake.enrollSecondFactor(uid)
            let enrolled = try await SecondFactorTests.enroll(world, name: "authenticator")
            #expect(enrolled.status == 0, "\(enrolled.output)")
            let refreshed = try await world.tokenctl(["refresh", "spare"])
            #expect(refreshed.status == 0, "the enrollment ended another session of the user: \(refreshed.stderr)")

            let removed = try await world.tokenctl(["account", "mfa", "remove", "work", sms])
            #expect(removed.status == 0, "\(removed.stderr)")
            #expect(world.fake.secondFactors(of: uid).count == 1)
            #expect(try await world.status().state == "active")
            // The renewed session keeps the second factor it was signed in with (a recording).
            let token = try await world.tokenctl(["token", "work"]).stdout.trimmingCharacters(in: .newlines)
            let claims = try #require(JWTClaims.decode(SecondFactorTests.SecondFactorClaim.self, from: token))
            #expect(claims.firebase?.sign_in_second_factor == "totp" && claims.firebase?.second_factor_identifier == world.fake.secondFactors(of: uid).first)
        }
    }

    /// Item 8: a pending credential Firebase no longer takes (too old: `TOTP_CHALLENGE_TIMEOUT`;
    /// unknown: `INVALID_PENDING_TOKEN`, both as a recording of production has them) means
    /// "sign in again" (77), not "check the configuration".
    @Test(arguments: ["TOTP_CHALLENGE_TIMEOUT", "INVALID_PENDING_TOKEN"])
    func aPendingCredentialFirebaseNoLongerTakesAsksForANewSignIn(_ code: String) async throws {
        try await withWorld { world in
            let totp = world.fake.enrollTOTP(world.fake.createUser(email: "sam@example.com", password: Self.password).uid)
            world.fake.update {
                if code == "TOTP_CHALLENGE_TIMEOUT" {
                    $0.pendingCredentialLifetime = -1
                } else {
                    $0.productionRefusals["v2/mfaSignIn:finalize"] = FakeFirebase.Refusal(message: code)
                }
            }
            let code6 = try #require(TOTP.code(base32Secret: totp.secret, at: Date()))
            let run = try await world.tokenctl(["login", "work", "--email", "sam@example.com"], stdin: "\(Self.password)\n\(code6)\n")
            #expect(run.status == 77, "\(run.stderr)")
            #expect(run.stderr.contains("\(code): the sign-in waited too long for its second factor"), "\(run.stderr)")
            #expect(try await world.storedSession() == nil)
        }
    }

    /// Item 8: a custom token minted for the project, used by an account with a `tenant_id`, is
    /// `TENANT_ID_MISMATCH`: tokenctl says how to mint it for the tenant; one minted so signs in.
    @Test func aCustomTokenOfAnotherTenantSaysHowToMintItForTheTenant() async throws {
        try await withWorld(accounts: [], startDaemon: false) { world in
            try world.writeConfig(world.firebaseAccount("work") + "\ntenant_id = \"\(TenantTests.tenant)\"\n")
            try await world.startDaemon()
            let wrong = try await world.tokenctl(["login", "work", "--custom-token"], stdin: Self.customToken(uid: "svc-9") + "\n")
            #expect(wrong.status == 78, "\(wrong.stderr)")
            #expect(wrong.stderr.contains("TENANT_ID_MISMATCH") && wrong.stderr.contains("authForTenant(TENANT_ID).createCustomToken(uid)"), "\(wrong.stderr)")
            let right = try await world.tokenctl(["login", "work", "--custom-token"], stdin: Self.customToken(uid: "svc-9", tenant: TenantTests.tenant) + "\n")
            #expect(right.status == 0, "\(right.stderr)")
        }
    }

    /// Item 9: codes within `adjacentIntervals` (default 5 steps of 30 s) sign in, as production.
    @Test func aCodeAFewStepsOldStillSignsIn() async throws {
        try await withWorld { world in
            let totp = world.fake.enrollTOTP(world.fake.createUser(email: "tom@example.com", password: Self.password).uid)
            let old = try #require(TOTP.code(base32Secret: totp.secret, at: Date().addingTimeInterval(-120)))
            let run = try await world.tokenctl(["login", "work", "--email", "tom@example.com"], stdin: "\(Self.password)\n\(old)\n")
            #expect(run.status == 0, "\(run.stderr)")
        }
    }
}
