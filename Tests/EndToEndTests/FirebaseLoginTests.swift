import Foundation
import Testing
import TokendCore
import TokendProtocol
import TokendFakes
import TokendTestSupport

/// Issue 10, sign-in: `tokenctl login` through the real tokend into a real keyring, against the
/// fake Firebase project's Identity Toolkit API.
@Suite(.serialized) struct FirebaseLoginTests {
    /// A login that replaces another user's session says so (issue 17.1): a second anonymous
    /// sign-in is a new uid, and scripts using the account now act as someone else. Signing
    /// the same user in again says nothing.
    @Test func aLoginThatReplacesAnotherUsersSessionSaysSo() async throws {
        try await withWorld { world in
            let first = try await world.tokenctl(["login", "work", "--anonymous"])
            #expect(first.status == 0 && !first.stdout.contains("different user"), "\(first.stdout)")
            let watcher = try EventRecorder(socketPath: world.socketPath, account: "work")
            let second = try await world.tokenctl(["login", "work", "--anonymous"])
            #expect(second.status == 0, "\(second.stderr)")
            #expect(second.stdout.contains("note: work held a session of a different user"), "\(second.stdout)")
            let event = try await watcher.first("the second signed_in event") { $0.event == .signedIn }
            #expect(event.replacedOtherUser == true)
        }
    }

    @Test func anonymousLoginStoresTheSessionServesItsTokenAndTellsWatchers() async throws {
        try await withWorld { world in
            let watcher = try EventRecorder(socketPath: world.socketPath, account: "work")
            let run = try await world.tokenctl(["login", "work", "--anonymous"])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.stdout.hasPrefix("work signed in (anonymous)"), "\(run.stdout)")
            let signUp = try #require(world.fake.requests.last { $0.path.hasSuffix("accounts:signUp") })
            #expect(try await world.storedSession()?.refreshToken == signUp.issuedRefreshToken)
            let token = try await world.tokenctl(["token", "work"])
            #expect(token.status == 0)
            #expect(token.stdout == (signUp.issuedIDToken ?? "-") + "\n")
            let event = try await watcher.first("signed_in") { $0.event == .signedIn }
            #expect(event.signInProvider == "anonymous")
            #expect(event.email == nil)
            #expect(!watcher.lines.withLock { $0 }.joined().contains(signUp.issuedIDToken ?? "-"))
        }
    }

    @Test func emailSignUpThenSignInWithThePasswordOnStdin() async throws {
        try await withWorld { world in
            let watcher = try EventRecorder(socketPath: world.socketPath, account: "work", profile: true)
            let created = try await world.tokenctl(["login", "work", "--email", "ada@example.com", "--create"], stdin: "correct horse\n")
            #expect(created.status == 0, "\(created.stderr)")
            #expect(created.stdout.hasPrefix("work signed in (password)"))
            let uid = try #require(world.fake.requests.last { $0.path.hasSuffix("accounts:signUp") }?.uid)
            #expect(world.fake.user(uid)?.email == "ada@example.com")
            // The profile-asking watcher gets the email; the password appears nowhere.
            let event = try await watcher.first("signed_in with email") { $0.event == .signedIn }
            #expect(event.email == "ada@example.com")
            #expect(try await world.tokenctl(["logout", "work"]).status == 0)
            let again = try await world.tokenctl(["login", "work", "--email", "ada@example.com"], stdin: "correct horse\n")
            #expect(again.status == 0, "\(again.stderr)")
            let token = try await world.tokenctl(["token", "work"])
            let claims = try #require(IDTokenClaims(token: String(token.stdout.dropLast())))
            #expect(claims.uid == uid)
            #expect(claims.signInProvider == "password")
            #expect(!world.daemonLog.contains("correct horse"))
        }
    }

    @Test func customTokenFromStdinSignsInItsUser() async throws {
        try await withWorld { world in
            let run = try await world.tokenctl(["login", "work", "--custom-token"], stdin: "service-account-7\n")
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.stdout.hasPrefix("work signed in (custom)"))
            let token = try await world.tokenctl(["token", "work"])
            #expect(IDTokenClaims(token: String(token.stdout.dropLast()))?.uid == "service-account-7")
        }
    }

    /// Every Identity Toolkit error a sign-in can meet: its code in the one stderr line, the exit
    /// status of its kind, and nothing stored.
    @Test func signInErrorsSayWhatHappenedWithTheirExitCodes() async throws {
        try await withWorld(startDaemon: false) { world in
            try world.writeConfig(
                [
                    world.firebaseAccount("work"), world.firebaseAccount("badkey", apiKey: "invalid-key"),
                    """
                    [account.down]
                    provider = "firebase"
                    api_key = "test-api-key"
                    emulator = "127.0.0.1:1"
                    """,
                ].joined(separator: "\n"))
            try await world.startDaemon()
            let fake = world.fake
            let user = fake.createUser(email: "grace@example.com", password: "right-password")
            let disabled = fake.createUser(email: "off@example.com", password: "right-password")
            fake.disableUser(disabled.uid)
            let mfa = fake.createUser(email: "mfa@example.com", password: "right-password")
            fake.enrollSecondFactor(mfa.uid)
            _ = user

            struct Case {
                var arguments: [String]
                var stdin: String?
                var status: Int32
                var says: String
                var before: (@Sendable (FakeFirebase) -> Void)? = nil
            }
            let cases: [Case] = [
                Case(arguments: ["login", "work", "--email", "grace@example.com"], stdin: "wrong-password\n", status: 77, says: "INVALID_LOGIN_CREDENTIALS"),
                Case(arguments: ["login", "work", "--email", "nobody@example.com"], stdin: "whatever1\n", status: 77, says: "INVALID_LOGIN_CREDENTIALS"),
                Case(
                    arguments: ["login", "work", "--email", "nobody@example.com"], stdin: "whatever1\n", status: 77, says: "EMAIL_NOT_FOUND",
                    before: { $0.update { $0.emailEnumerationProtection = false } }),
                Case(arguments: ["login", "work", "--email", "grace@example.com"], stdin: "wrong-password\n", status: 77, says: "INVALID_PASSWORD"),
                Case(arguments: ["login", "work", "--email", "off@example.com"], stdin: "right-password\n", status: 77, says: "USER_DISABLED"),
                Case(arguments: ["login", "work", "--email", "grace@example.com", "--create"], stdin: "another-password\n", status: 64, says: "EMAIL_EXISTS"),
                Case(arguments: ["login", "work", "--email", "new@example.com", "--create"], stdin: "abc\n", status: 64, says: "WEAK_PASSWORD"),
                Case(arguments: ["login", "work", "--email", "not-an-address", "--create"], stdin: "long-enough\n", status: 64, says: "INVALID_EMAIL"),
                Case(arguments: ["login", "work", "--email", "mfa@example.com"], stdin: "right-password\n", status: 78, says: "second factor"),
                Case(arguments: ["login", "work", "--custom-token"], stdin: "not a token!\n", status: 77, says: "INVALID_CUSTOM_TOKEN"),
                Case(arguments: ["login", "work", "--email", "grace@example.com"], stdin: "\n", status: 64, says: "no password was given"),
                Case(arguments: ["login", "work", "--google"], status: 78, says: "google_client_id"),
                Case(arguments: ["login", "badkey", "--anonymous"], status: 78, says: "API_KEY_INVALID"),
                Case(arguments: ["login", "down", "--anonymous"], status: 75, says: "network"),
                Case(
                    arguments: ["login", "work", "--anonymous"], status: 78, says: "ADMIN_ONLY_OPERATION",
                    before: { $0.update { $0.disabledProviders = ["anonymous"] } }),
                Case(
                    arguments: ["login", "work", "--email", "new@example.com", "--create"], stdin: "long-enough\n", status: 78,
                    says: "ADMIN_ONLY_OPERATION", before: { $0.update { $0.adminOnlySignUp = true } }),
                Case(
                    arguments: ["login", "work", "--email", "grace@example.com"], stdin: "right-password\n", status: 75,
                    says: "TOO_MANY_ATTEMPTS_TRY_LATER", before: { $0.update { $0.maximumFailedSignIns = 1 } }),
            ]
            for item in cases {
                item.before?(fake)
                let run = try await world.tokenctl(item.arguments, stdin: item.stdin)
                #expect(run.status == item.status, "\(item.arguments) \(run.stderr)")
                #expect(run.stderr.contains(item.says), "\(item.arguments): \(run.stderr)")
                #expect(run.stderr.split(separator: "\n").count == 1, "one line: \(run.stderr)")
                #expect(run.stdout.isEmpty)
            }
            #expect(try await world.storedSession() == nil)
            #expect(try await world.status().state == "needs_login")
        }
    }

    @Test func aTokenRequestNeverStartsALoginItNamesTheCommand() async throws {
        try await withWorld { world in
            let run = try await world.tokenctl(["token", "work"])
            #expect(run.status == 77)
            #expect(run.stderr.contains("tokenctl login work"), "\(run.stderr)")
            #expect(world.fake.requests.isEmpty)
        }
    }
}

