import Foundation
import Testing
import TokendCore
import TokendProtocol
import TokendFakes
import TokendTestSupport

/// Issue 10, account management: `tokenctl account …` through the real tokend, the session in
/// a real keyring, the fake Firebase project answering. Each case runs both ways (issue 47):
/// the tokend binary against the fake on loopback, and the same daemon in-process.
@Suite(.serialized) struct FirebaseAccountTests {
    /// Signs `work` in with a new email user; returns its uid.
    func signUp(_ world: DaemonHarness, _ email: String, password: String = "first-password") async throws -> String {
        let run = try await world.tokenctl(["login", "work", "--email", email, "--create"], stdin: password + "\n")
        guard run.status == 0 else { throw HarnessError("sign-up failed: \(run.stderr)") }
        return try #require(world.fake.requests.last { $0.path.hasSuffix("accounts:signUp") }?.uid)
    }

    @Test(arguments: DaemonHarness.Mode.allCases) func showVerifyEmailAndTheVerificationArrivingAsUserChanged(mode: DaemonHarness.Mode) async throws {
        try await withWorld(mode: mode) { world in
            let uid = try await signUp(world, "ada@example.com")
            let watcher = try EventRecorder(socketPath: world.socketPath, account: "work")

            let shown = try await world.tokenctl(["account", "show", "work"])
            #expect(shown.status == 0, "\(shown.stderr)")
            #expect(shown.stdout.contains("uid              \(uid)"), "\(shown.stdout)")
            #expect(shown.stdout.contains("ada@example.com (not verified)"))
            #expect(shown.stdout.contains("signed in with   password"))
            let json = try await world.tokenctl(["account", "show", "work", "--json"])
            let profile = try JSONDecoder().decode(AccountProfile.self, from: Data(json.stdout.utf8))
            #expect(profile.uid == uid)
            #expect(profile.providers == ["password"])
            #expect(profile.project == world.fake.options.projectID)
            #expect(profile.authTime != nil)

            let verify = try await world.tokenctl(["account", "verify-email", "work"])
            #expect(verify.status == 0, "\(verify.stderr)")
            #expect(verify.stdout == "verification email sent to ada@example.com\n")
            #expect(world.fake.sentEmails.last == FakeFirebase.SentEmail(kind: "VERIFY_EMAIL", email: "ada@example.com", uid: uid))

            // The user clicks the link; the next refresh carries email_verified and says so.
            world.fake.confirmEmailVerification(uid)
            #expect(try await world.tokenctl(["refresh", "work"]).status == 0)
            let changed = try await watcher.first("user_changed") { $0.event == .userChanged }
            #expect(changed.reason == "email_verified")
            #expect(changed.email == nil, "no email for a watcher that did not ask for profile fields")
            #expect(try await world.tokenctl(["account", "show", "work"]).stdout.contains("ada@example.com (verified)"))
        }
    }

    @Test(arguments: DaemonHarness.Mode.allCases) func resetPasswordWorksWithoutASessionAndDefaultsToTheSessionsEmail(mode: DaemonHarness.Mode) async throws {
        try await withWorld(mode: mode) { world in
            let known = world.fake.createUser(email: "bob@example.com", password: "first-password")
            let noSession = try await world.tokenctl(["account", "reset-password", "work", "--email", "bob@example.com"])
            #expect(noSession.status == 0, "\(noSession.stderr)")
            #expect(world.fake.sentEmails.last == FakeFirebase.SentEmail(kind: "PASSWORD_RESET", email: "bob@example.com", uid: known.uid))
            let noAddress = try await world.tokenctl(["account", "reset-password", "work"])
            #expect(noAddress.status == 64)
            #expect(noAddress.stderr.contains("--email ADDRESS"), "\(noAddress.stderr)")
            let uid = try await signUp(world, "cy@example.com")
            let fromSession = try await world.tokenctl(["account", "reset-password", "work"])
            #expect(fromSession.status == 0, "\(fromSession.stderr)")
            #expect(world.fake.sentEmails.last == FakeFirebase.SentEmail(kind: "PASSWORD_RESET", email: "cy@example.com", uid: uid))
        }
    }

    @Test(arguments: DaemonHarness.Mode.allCases) func upgradeKeepsTheAnonymousUidAndReplacesTheSession(mode: DaemonHarness.Mode) async throws {
        try await withWorld(mode: mode) { world in
            #expect(try await world.tokenctl(["login", "work", "--anonymous"]).status == 0)
            let uid = try #require(world.fake.requests.last { $0.path.hasSuffix("accounts:signUp") }?.uid)
            let watcher = try EventRecorder(socketPath: world.socketPath, account: "work")
            let run = try await world.tokenctl(["account", "upgrade", "work", "--email", "dee@example.com"], stdin: "new-password\n")
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.stdout == "work upgraded: signed in with password, same uid\n")
            // Linked the way the SDKs do it today (accounts:signUp with the ID token), which
            // projects with email-enumeration protection allow; accounts:update is never called.
            let link = try #require(world.fake.requests.last { $0.path.hasSuffix("accounts:signUp") })
            #expect(link.uid == uid)
            #expect(!world.fake.requests.contains { $0.path.hasSuffix("accounts:update") })
            #expect(try await world.storedSession()?.refreshToken == link.issuedRefreshToken)
            let token = try await world.tokenctl(["token", "work"])
            let claims = try #require(IDTokenClaims(token: String(token.stdout.dropLast())))
            #expect(claims.uid == uid)
            #expect(claims.signInProvider == "password")
            #expect(world.fake.user(uid)?.providers == ["password"])
            let changed = try await watcher.first("user_changed") { $0.event == .userChanged }
            #expect(changed.reason == "upgraded")
            // The new password signs the same user in; a permanent user cannot be upgraded again.
            #expect(try await world.tokenctl(["login", "work", "--email", "dee@example.com"], stdin: "new-password\n").status == 0)
            let again = try await world.tokenctl(["account", "upgrade", "work", "--email", "eve@example.com"], stdin: "new-password\n")
            #expect(again.status == 64)
            #expect(again.stderr.contains("already a permanent user"), "\(again.stderr)")
        }
    }

    /// Issue 18: a project with email-enumeration protection (the fake's default, production's
    /// since September 2023) refuses accounts:update an unverified email change, which is how
    /// tokend linked email and password before; the upgrade must still keep the uid.
    @Test(arguments: DaemonHarness.Mode.allCases) func upgradeKeepsTheUidWhereProtectionRefusesTheOldCall(mode: DaemonHarness.Mode) async throws {
        try await withWorld(mode: mode) { world in
            #expect(world.fake.options.emailEnumerationProtection)
            #expect(try await world.tokenctl(["login", "work", "--anonymous"]).status == 0)
            let uid = try #require(world.fake.requests.last { $0.path.hasSuffix("accounts:signUp") }?.uid)
            let run = try await world.tokenctl(["account", "upgrade", "work", "--email", "ona@example.com"], stdin: "new-password\n")
            #expect(run.status == 0, "\(run.stderr)")
            let token = try await world.tokenctl(["token", "work"])
            let claims = try #require(IDTokenClaims(token: String(token.stdout.dropLast())))
            #expect(claims.uid == uid)
            #expect(world.fake.user(uid)?.email == "ona@example.com")
            #expect(!world.fake.requests.contains { $0.path.hasSuffix("accounts:update") })
        }
    }

    /// Issue 18: setting the password voids the anonymous refresh token (`validSince`). A refresh
    /// that presents it while the upgrade's answer is on its way hears `TOKEN_EXPIRED`; that is
    /// no verdict on the account: no `needs_login`, the keyring keeps a session throughout, and
    /// the upgraded session is what is served and stored.
    @Test(arguments: DaemonHarness.Mode.allCases) func aRefreshRefusedWhileTheUpgradeSetsThePasswordDoesNotEndTheSession(mode: DaemonHarness.Mode) async throws {
        try await withWorld(mode: mode) { world in
            #expect(try await world.tokenctl(["login", "work", "--anonymous"]).status == 0)
            let watcher = try EventRecorder(socketPath: world.socketPath, account: "work")
            // The link is made at once; its answer is held back 3 s.
            world.fake.update { $0.signInLatency["pia@example.com"] = 3 }
            let output = world.keyring.root.appendingPathComponent("upgrade.out").path
            let input = world.keyring.root.appendingPathComponent("upgrade.in")
            try "new-password\n".write(to: input, atomically: true, encoding: .utf8)
            let password = open(input.path, O_RDONLY | O_CLOEXEC)
            defer { close(password) }
            let upgrade = try ChildProcess.start(
                DaemonHarness.binDirectory + "/tokenctl", ["account", "upgrade", "work", "--email", "pia@example.com"],
                environment: world.environment, stdin: password, output: output)
            try await poll("the link request reaches the fake") {
                world.fake.requests.filter { $0.path.hasSuffix("accounts:signUp") }.count == 2
            }
            let refresh = try await world.tokenctl(["refresh", "work"])
            #expect(refresh.status == 75, "a refused old token is retried, not a needs-login verdict: \(refresh.status) \(refresh.stderr)")
            #expect(try await world.storedSession() != nil)
            var status: Int32?
            try await poll("the upgrade finishes") {
                status = ChildProcess.exitStatusIfEnded(upgrade)
                return status != nil
            }
            #expect(status == 0, "\((try? String(contentsOfFile: output, encoding: .utf8)) ?? "")")
            let link = try #require(world.fake.requests.last { $0.path.hasSuffix("accounts:signUp") })
            #expect(try await world.storedSession()?.refreshToken == link.issuedRefreshToken)
            let token = try await world.tokenctl(["token", "work"])
            #expect(token.status == 0, "\(token.stderr)")
            #expect(IDTokenClaims(token: String(token.stdout.dropLast()))?.signInProvider == "password")
            _ = try await watcher.first("user_changed") { $0.event == .userChanged }
            #expect(!watcher.events.contains { $0.event == .needsLogin }, "\(watcher.events.map(\.event))")
        }
    }

    @Test(arguments: DaemonHarness.Mode.allCases) func deleteRefusesWithoutYesThenRemovesTheUserAndTheKeyringItem(mode: DaemonHarness.Mode) async throws {
        try await withWorld(mode: mode) { world in
            let uid = try await signUp(world, "fay@example.com")
            let watcher = try EventRecorder(socketPath: world.socketPath, account: "work")
            let refused = try await world.tokenctl(["account", "delete", "work"])
            #expect(refused.status == 64)
            #expect(refused.stderr.contains("user \(uid) (fay@example.com)"), "\(refused.stderr)")
            #expect(refused.stderr.contains("--yes"))
            #expect(world.fake.hasUser(uid))
            #expect(try await world.storedSession() != nil)

            let deleted = try await world.tokenctl(["account", "delete", "work", "--yes"])
            #expect(deleted.status == 0, "\(deleted.stderr)")
            #expect(!world.fake.hasUser(uid))
            #expect(try await world.storedSession() == nil)
            #expect(try await world.status().state == "needs_login")
            let event = try await watcher.first("signed_out") { $0.event == .signedOut }
            #expect(event.reason == "deleted")
            let token = try await world.tokenctl(["token", "work"])
            #expect(token.status == 77)
            #expect(token.stderr.contains("tokenctl login work"))
        }
    }

    @Test(arguments: DaemonHarness.Mode.allCases) func managementErrorsNameTheNextStep(mode: DaemonHarness.Mode) async throws {
        var options = FakeFirebase.Options()
        let clock = ManualClock(Date())
        options.clock = clock
        try await withWorld(options: options, mode: mode) { world in
            // No session at all: show and verify-email need one.
            let none = try await world.tokenctl(["account", "show", "work"])
            #expect(none.status == 77)
            #expect(none.stderr.contains("tokenctl login work"), "\(none.stderr)")

            let uid = try await signUp(world, "gus@example.com")
            // Ten minutes after the sign-in, deleting needs a fresh one.
            world.fake.update { $0.recentSignInWindow = 300 }
            clock.advance(by: 600)
            let stale = try await world.tokenctl(["account", "delete", "work", "--yes"])
            #expect(stale.status == 77)
            #expect(stale.stderr.contains("CREDENTIAL_TOO_OLD_LOGIN_AGAIN"), "\(stale.stderr)")
            #expect(stale.stderr.contains("tokenctl login work"), "\(stale.stderr)")
            #expect(world.fake.hasUser(uid))
            #expect(try await world.storedSession() != nil)

            world.fake.update {
                $0.recentSignInWindow = nil
                $0.adminOnlyDelete = true
            }
            let adminOnly = try await world.tokenctl(["account", "delete", "work", "--yes"])
            #expect(adminOnly.status == 78)
            #expect(adminOnly.stderr.contains("ADMIN_ONLY_OPERATION"), "\(adminOnly.stderr)")

            let taken = world.fake.createUser(email: "taken@example.com", password: "first-password")
            _ = taken
            #expect(try await world.tokenctl(["login", "work", "--anonymous"]).status == 0)
            let exists = try await world.tokenctl(["account", "upgrade", "work", "--email", "taken@example.com"], stdin: "new-password\n")
            #expect(exists.status == 64)
            #expect(exists.stderr.contains("EMAIL_EXISTS"), "\(exists.stderr)")
            let weak = try await world.tokenctl(["account", "upgrade", "work", "--email", "hal@example.com"], stdin: "abc\n")
            #expect(weak.status == 64)
            #expect(weak.stderr.contains("WEAK_PASSWORD"), "\(weak.stderr)")

            // An ID token Firebase no longer accepts (here: minted for another project).
            world.fake.update { $0.projectID = "another-project" }
            let invalid = try await world.tokenctl(["account", "show", "work"])
            #expect(invalid.status == 77)
            #expect(invalid.stderr.contains("INVALID_ID_TOKEN"), "\(invalid.stderr)")
            #expect(invalid.stderr.contains("tokenctl login work"), "\(invalid.stderr)")
        }
    }
}
