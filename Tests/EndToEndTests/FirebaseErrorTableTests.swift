import Foundation
import Testing
import TokendFakes
import TokendProtocol
import TokendTestSupport

/// README.md's Firebase table "When it fails", row by row, through the real tokenctl and tokend against
/// the fake project (and oidc-provider-mock standing in for Google): each row's command meets
/// the condition its second column names, exits with its code and prints its line. A row
/// without a scenario here, or a scenario without a row, fails the test.
@Suite(.serialized) struct FirebaseErrorTableTests {
    struct Row: CustomStringConvertible {
        var command: String
        var answer: String
        var exit: Int32
        var line: String
        var key: String { "\(command) | \(answer)" }
        var description: String { key }
    }

    /// How a row is brought about: what the project looks like, what the user types.
    struct Scenario {
        var stdin: String?
        /// Signs in at the Google stand-in as this user (the command runs with --no-browser).
        var googleUser: String?
        var arrange: @Sendable (DaemonHarness, OIDCProviderMock) async throws -> Void = { _, _ in }
        /// What else must hold afterwards (an account's refresh is not parked).
        var check: @Sendable (DaemonHarness) async throws -> Void = { _ in }
    }

    static let readme = Repository.root.appendingPathComponent("README.md")

    /// The rows between the table's marker comment and the first line that is not a row.
    static func rows() throws -> [Row] {
        let text = try String(contentsOf: readme, encoding: .utf8)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let start = try require(lines.firstIndex { $0.hasPrefix("<!-- firebase-errors") }, "README.md has no firebase-errors table")
        var rows: [Row] = []
        for line in lines[(start + 3)...] {
            guard line.hasPrefix("|") else { break }
            let cells = line.dropFirst().dropLast().components(separatedBy: " | ").map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count == 4, let exit = Int32(cells[2]) else { throw HarnessError("README row is not `| command | answer | exit | line |`: \(line)") }
            func code(_ cell: String) -> String { cell.hasPrefix("`") && cell.hasSuffix("`") ? String(cell.dropFirst().dropLast()) : cell }
            rows.append(Row(command: code(cells[0]), answer: cells[1], exit: exit, line: code(cells[3]).replacingOccurrences(of: "\\|", with: "|")))
        }
        return rows
    }

    static let password = "right-password-1"

    /// Signs `work` in as a new password user with `email` (FirebaseAccountTests' sign-up).
    static func signedIn(_ world: DaemonHarness, _ email: String) async throws {
        _ = try await FirebaseAccountTests().signUp(world, email, password: password)
    }

    static func anonymous(_ world: DaemonHarness) async throws {
        let run = try await world.tokenctl(["login", "work", "--anonymous"])
        guard run.status == 0 else { throw HarnessError("anonymous sign-in failed: \(run.stderr)") }
    }

    /// A user `email` with an SMS factor (`sms-1`) and a TOTP one (`totp-1`); its uid.
    @discardableResult
    static func twoFactors(_ world: DaemonHarness, _ email: String) -> String {
        let uid = world.fake.createUser(email: email, password: password).uid
        world.fake.enrollSecondFactor(uid, id: "sms-1")
        _ = world.fake.enrollTOTP(uid, displayName: "phone app", id: "totp-1")
        return uid
    }

    /// A user `email` with two TOTP factors (`totp-1` "phone app", `totp-2` "tablet") and an SMS one.
    static func twoTOTPFactors(_ world: DaemonHarness, _ email: String) {
        _ = world.fake.enrollTOTP(twoFactors(world, email), displayName: "tablet", id: "totp-2")
    }

    /// A user `email` with a verified address signed in on `work`, in a project with TOTP on.
    static func readyToEnroll(_ world: DaemonHarness, _ email: String) async throws {
        world.fake.update { $0.totpEnabled = true }
        try await signedIn(world, email)
        world.fake.confirmEmailVerification(try require(world.fake.requests.last { $0.path.hasSuffix("accounts:signUp") }?.uid))
    }

    static let policy = FakeFirebase.PasswordPolicy(minimumLength: 8, requireUppercase: true, requireNumeric: true)

    /// Every row's scenario, by the row's command and answer.
    static let scenarios: [String: Scenario] = [
        "login work --email ada@example.com | `INVALID_LOGIN_CREDENTIALS`": Scenario(stdin: "wrong-password"),
        "login work --email ada@example.com | `EMAIL_NOT_FOUND` (no email-enumeration protection)": Scenario(stdin: "wrong-password") { world, _ in
            world.fake.update { $0.emailEnumerationProtection = false }
        },
        "login work --email bo@example.com | `INVALID_PASSWORD` (no email-enumeration protection)": Scenario(stdin: "wrong-password") { world, _ in
            world.fake.update { $0.emailEnumerationProtection = false }
            _ = world.fake.createUser(email: "bo@example.com", password: password)
        },
        "login work --email cy@example.com | `USER_DISABLED`": Scenario(stdin: password) { world, _ in
            world.fake.disableUser(world.fake.createUser(email: "cy@example.com", password: password).uid)
        },
        "login work --email ada@example.com | `PASSWORD_LOGIN_DISABLED`": Scenario(stdin: password) { world, _ in
            world.fake.update { $0.disabledProviders = ["password"] }
        },
        "login work --email ada@example.com | `MISSING_RECAPTCHA_TOKEN` (reCAPTCHA enforced)": Scenario(stdin: password) { world, _ in
            world.fake.update { $0.recaptchaEnforced = ["password"] }
        },
        "login work --email ada@example.com | HTTP 401 `Firebase App Check token is invalid.`": Scenario(stdin: password) { world, _ in
            world.fake.update { $0.productionRefusals["signInWithPassword"] = .appCheck }
        },
        "login work --email ada@example.com | `TOO_MANY_ATTEMPTS_TRY_LATER`": Scenario(stdin: password) { world, _ in
            world.fake.update { $0.maximumFailedSignIns = 0 }
        },
        "login work --email di@example.com | `mfaPendingCredential`, an SMS factor only": Scenario(stdin: password) { world, _ in
            world.fake.enrollSecondFactor(world.fake.createUser(email: "di@example.com", password: password).uid, id: "sms-1")
        },
        "login work --email dj@example.com | `mfaPendingCredential`, two TOTP factors (and an SMS one) and no `--factor`": Scenario(stdin: password) { world, _ in
            twoTOTPFactors(world, "dj@example.com")
        },
        "login work --email dk@example.com --factor nope | `mfaPendingCredential`, no factor `nope`": Scenario(stdin: password) { world, _ in
            twoFactors(world, "dk@example.com")
        },
        // A 4-digit code passes tokenctl's check and can never be the fake's 6-digit one.
        "login work --email dl@example.com | `INVALID_CODE` (a wrong TOTP code)": Scenario(stdin: password + "\n0000") { world, _ in
            _ = world.fake.enrollTOTP(world.fake.createUser(email: "dl@example.com", password: password).uid)
        },
        "login work --email dm@example.com | `TOTP_CHALLENGE_TIMEOUT` (the code came after the pending credential expired)": Scenario(stdin: password + "\n000000") { world, _ in
            _ = world.fake.enrollTOTP(world.fake.createUser(email: "dm@example.com", password: password).uid)
            world.fake.update { $0.pendingCredentialLifetime = -1 }
        },
        "login work --email dn@example.com | `INVALID_PENDING_TOKEN` (Firebase does not know the pending credential)": Scenario(stdin: password + "\n000000") { world, _ in
            _ = world.fake.enrollTOTP(world.fake.createUser(email: "dn@example.com", password: password).uid)
            world.fake.update { $0.productionRefusals["v2/mfaSignIn:finalize"] = FakeFirebase.Refusal(message: "INVALID_PENDING_TOKEN") }
        },
        "login work --email ada@example.com | `API_KEY_INVALID`": Scenario(stdin: password) { world, _ in
            world.fake.update { $0.invalidAPIKeys = ["test-api-key"] }
        },
        "login work --email ada@example.com | 403 `API_KEY_HTTP_REFERRER_BLOCKED` (the key is restricted to websites)": Scenario(stdin: password) { world, _ in
            world.fake.update { $0.restrictedAPIKeys["test-api-key"] = .httpReferrer }
        },
        "login work --email bo@example.com --create | `EMAIL_EXISTS`": Scenario(stdin: password) { world, _ in
            _ = world.fake.createUser(email: "bo@example.com", password: password)
        },
        "login work --email ed@example.com --create | `WEAK_PASSWORD`": Scenario(stdin: "abc"),
        "login work --email ed@example.com --create | `PASSWORD_DOES_NOT_MEET_REQUIREMENTS` (a password policy)": Scenario(stdin: "lowercase-only") { world, _ in
            world.fake.update { $0.passwordPolicy = policy }
        },
        "login work --email ed@example.com --create | `OPERATION_NOT_ALLOWED`": Scenario(stdin: password) { world, _ in
            world.fake.update { $0.disabledProviders = ["password"] }
        },
        "login work --email ed@example.com --create | `ADMIN_ONLY_OPERATION` (self sign-up off)": Scenario(stdin: password) { world, _ in
            world.fake.update { $0.adminOnlySignUp = true }
        },
        "login work --anonymous | `ADMIN_ONLY_OPERATION` (anonymous sign-in off)": Scenario { world, _ in
            world.fake.update { $0.disabledProviders = ["anonymous"] }
        },
        "login work --custom-token | `INVALID_CUSTOM_TOKEN`": Scenario(stdin: "not a custom token!"),
        "login work --custom-token | `TENANT_ID_MISMATCH` (the token was minted for a tenant, the account has none)": Scenario(
            stdin: SecondFactorFidelityTests.customToken(uid: "svc-1", tenant: "acme-x1y2z")),
        "login work --google | `needConfirmation` (one account per email)": Scenario(googleUser: "fay") { world, mock in
            _ = world.fake.createUser(email: "fay@example.com", password: password)
            try await mock.setClaims(of: "fay", #"{"email": "fay@example.com", "email_verified": false}"#)
        },
        "login work --google | `needConfirmation` (one account per email; its owner signs in with GitHub)": Scenario(googleUser: "lee") { world, mock in
            _ = world.fake.createFederatedUser(email: "lee@example.com", provider: "github.com", rawID: "4711")
            try await mock.setClaims(of: "lee", #"{"email": "lee@example.com", "email_verified": false}"#)
        },
        "login work --google | `INVALID_IDP_RESPONSE` (the client is not the project's)": Scenario(googleUser: "gus") { world, _ in
            world.fake.update { $0.identityProviders["google.com"]?.clientIDs = ["the-projects-own-client"] }
        },
        "login work --google | `INVALID_CREDENTIAL_OR_PROVIDER_ID` (the project takes the provider's tokens only from its hosted handler)": Scenario(googleUser: "max") { world, _ in
            world.fake.update { $0.clientCredentialsRefused = ["google.com"] }
        },
        "login work --google | `MISSING_OR_INVALID_NONCE`": Scenario(googleUser: "nia") { world, _ in
            world.fake.update { $0.productionRefusals["signInWithIdp"] = FakeFirebase.Refusal(message: "MISSING_OR_INVALID_NONCE : Duplicate credential received. Please try again with a new credential.") }
        },
        "account upgrade work --email bo@example.com | `EMAIL_EXISTS`": Scenario(stdin: password) { world, _ in
            _ = world.fake.createUser(email: "bo@example.com", password: password)
            try await anonymous(world)
        },
        "account upgrade work --email hal@example.com | `WEAK_PASSWORD`": Scenario(stdin: "abc") { world, _ in
            try await anonymous(world)
        },
        "account upgrade work --email hal@example.com | `PASSWORD_DOES_NOT_MEET_REQUIREMENTS` (a password policy)": Scenario(stdin: "lowercase-only") { world, _ in
            world.fake.update { $0.passwordPolicy = policy }
            try await anonymous(world)
        },
        "account upgrade work --google | `FEDERATED_USER_ID_ALREADY_LINKED`": Scenario(googleUser: "ina") { world, mock in
            let first = try await OIDCMockTests.tokenctlSigningInAtTheMock(world, mock, ["login", "work", "--google"], user: "ina")
            guard first.status == 0 else { throw HarnessError("the Google sign-in of ina failed: \(first.output)") }
            try await anonymous(world)
        },
        "account reset-password work --email nobody@example.com | `EMAIL_NOT_FOUND` (no email-enumeration protection)": Scenario { world, _ in
            world.fake.update { $0.emailEnumerationProtection = false }
        },
        "account reset-password work --email bo@example.com | `RESET_PASSWORD_EXCEED_LIMIT`": Scenario { world, _ in
            world.fake.update { $0.productionRefusals["sendOobCode"] = FakeFirebase.Refusal(message: "RESET_PASSWORD_EXCEED_LIMIT") }
        },
        "account verify-email work | `QUOTA_EXCEEDED`": Scenario { world, _ in
            try await signedIn(world, "jo@example.com")
            world.fake.update { $0.productionRefusals["sendOobCode"] = FakeFirebase.Refusal(message: "QUOTA_EXCEEDED : Exceeded quota for email sending.") }
        },
        "account delete work --yes | `ADMIN_ONLY_OPERATION` (deletion off)": Scenario { world, _ in
            try await signedIn(world, "kim@example.com")
            world.fake.update { $0.adminOnlyDelete = true }
        },
        "account delete work --yes | `CREDENTIAL_TOO_OLD_LOGIN_AGAIN`": Scenario { world, _ in
            try await signedIn(world, "lu@example.com")
            // Any sign-in is too old for a window below zero.
            world.fake.update { $0.recentSignInWindow = -1 }
        },
        "account mfa enroll work --totp | `OPERATION_NOT_ALLOWED` (TOTP not enabled: every project's default)": Scenario { world, _ in
            try await signedIn(world, "va@example.com")
        },
        "account mfa enroll work --totp | `UNVERIFIED_EMAIL`": Scenario { world, _ in
            world.fake.update { $0.totpEnabled = true }
            try await signedIn(world, "vi@example.com")
        },
        "account mfa enroll work --totp | `UNSUPPORTED_FIRST_FACTOR` (a custom-token session)": Scenario { world, _ in
            world.fake.update { $0.totpEnabled = true }
            let run = try await world.tokenctl(["login", "work", "--custom-token"], stdin: "service-7\n")
            guard run.status == 0 else { throw HarnessError("custom-token sign-in failed: \(run.stderr)") }
        },
        "account mfa enroll work --totp | `CREDENTIAL_TOO_OLD_LOGIN_AGAIN` (signed in more than about 5 minutes ago)": Scenario { world, _ in
            try await readyToEnroll(world, "vo@example.com")
            // Any sign-in is too old for a window below zero.
            world.fake.update { $0.enrollmentRecentSignInWindow = -1 }
        },
        "account mfa enroll work --totp | `INVALID_CODE` (a wrong code)": Scenario(stdin: "0000") { world, _ in
            try await readyToEnroll(world, "wu@example.com")
        },
        "account mfa remove work nope | `MFA_ENROLLMENT_NOT_FOUND`": Scenario { world, _ in
            try await signedIn(world, "xi@example.com")
        },
        "account mfa remove work totp-1 | 200 without tokens (the newest factor withdrawn)": Scenario(
            arrange: { world, _ in
                // Enrolled elsewhere while work holds the session: the newest (and only) factor.
                _ = world.fake.enrollTOTP(try await FirebaseAccountTests().signUp(world, "xo@example.com", password: password), id: "totp-1")
            },
            check: { world in
                let stored = try await world.storedSession()
                #expect(stored == nil, "the session Firebase ended was kept")
            }),
        "account show work | `INVALID_ID_TOKEN`": Scenario { world, _ in
            try await signedIn(world, "mo@example.com")
            world.fake.update { $0.projectID = "another-project" }
        },
        "refresh work | `TOKEN_EXPIRED` (sessions revoked, or the password changed elsewhere)": Scenario { world, _ in
            world.fake.revokeTokens(try await FirebaseAccountTests().signUp(world, "ned@example.com", password: password))
        },
        "login work --email ada@example.com | 403 `API_KEY_IOS_APP_BLOCKED` (the key of an iOS app's `GoogleService-Info.plist`)": Scenario(stdin: password) { world, _ in
            world.fake.update { $0.restrictedAPIKeys["test-api-key"] = .iosApp }
        },
        "refresh work | 403 `API_KEY_ANDROID_APP_BLOCKED` (the key of an Android app's `google-services.json`)": Scenario(
            arrange: { world, _ in
                try await signedIn(world, "pat@example.com")
                world.fake.update { $0.restrictedAPIKeys["test-api-key"] = .androidApp }
            },
            check: { world in
                // The key, not the session, is refused: the session stays stored.
                let stored = try await world.storedSession()
                #expect(stored != nil, "a refresh refused for the key's restriction lost the session")
            }),
        "refresh work | 403 `SERVICE_DISABLED` (the Token Service API is off in the key's project)": Scenario(
            arrange: { world, _ in
                try await signedIn(world, "pia@example.com")
                world.fake.update { $0.restrictedAPIKeys["test-api-key"] = .serviceDisabled }
            },
            check: { world in
                let stored = try await world.storedSession()
                #expect(stored != nil, "a refresh refused for a disabled API lost the session")
            }),
        "refresh work | `QUOTA_EXCEEDED`": Scenario(
            arrange: { world, _ in
                try await signedIn(world, "oz@example.com")
                world.fake.faults.inject(.firebaseError("QUOTA_EXCEEDED : Exceeded quota."), count: 1)
            },
            check: { world in
                // A quota is no verdict on the session: the account retries, it is not parked.
                // The retry may already be under way (or done) when the status is read.
                let state = try await world.status().state
                #expect(["retrying", "refreshing", "active"].contains(state), "after QUOTA_EXCEEDED the account is \(state)")
            }),
    ]

    @Test func everyRowOfTheReadmeTableHoldsThroughTheRealTokenctlAndTokend() async throws {
        let rows = try Self.rows()
        #expect(rows.count >= 25, "the README table lost rows: \(rows.count)")
        let unscripted = rows.filter { Self.scenarios[$0.key] == nil }
        #expect(unscripted.isEmpty, "README rows without a scenario here: \(unscripted)")
        let unlisted = Set(Self.scenarios.keys).subtracting(rows.map(\.key))
        #expect(unlisted.isEmpty, "scenarios without a README row: \(unlisted.sorted())")
        try await OIDCMockTests().withMock { world, mock in
            let baseline = world.fake.options
            try await OIDCMockTests.startWithGoogleStandIn(world, mock)
            let google = world.fake.options.identityProviders
            var mismatches: [String] = []
            for row in rows {
                guard let scenario = Self.scenarios[row.key] else { continue }
                world.fake.update {
                    $0 = baseline
                    $0.identityProviders = google
                }
                _ = try await world.tokenctl(["logout", "work"])
                try await scenario.arrange(world, mock)
                let arguments = row.command.split(separator: " ").map(String.init)
                let status: Int32
                let output: String
                if let user = scenario.googleUser {
                    (status, output) = try await OIDCMockTests.tokenctlSigningInAtTheMock(world, mock, arguments, user: user)
                } else {
                    let run = try await world.tokenctl(arguments, stdin: scenario.stdin.map { $0 + "\n" })
                    (status, output) = (run.status, run.stderr)
                }
                let printed = output.split(separator: "\n").last { $0.hasPrefix("tokenctl: ") }.map(String.init) ?? output
                // The config path and the times of a run read as README writes them.
                let line = printed.replacingOccurrences(of: world.configPath, with: "~/.config/tokend/config.toml")
                    .replacing(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ/, with: "TIME")
                if status != row.exit || line != row.line {
                    mismatches.append("| `\(row.command)` | \(row.answer) | \(status) | `\(line.replacingOccurrences(of: "|", with: "\\|"))` |")
                }
                try await scenario.check(world)
            }
            #expect(mismatches.isEmpty, "rows that do not hold; what tokenctl did instead:\n\(mismatches.joined(separator: "\n"))")
        }
    }
}
