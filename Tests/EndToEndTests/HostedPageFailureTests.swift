import Foundation
import Testing
import TokendFakes
import TokendTestSupport

/// README.md's table "When the hosted page fails", row by row (issue 33, item 3; issue 44,
/// items 2 and 4): through tokend's page in a real headless Chromium and the stand-in handler,
/// each row's failure ends the page on "Sign-in failed (CODE): ADVICE." and tokenctl with the
/// row's exit status and "CODE: ADVICE", plus what the page's SDK said where it says more
/// (an expired Azure client secret's AADSTS text), cleaned of credentials. A row without a
/// scenario here, or a scenario without a row, fails the test.
@Suite(.serialized) struct HostedPageFailureTests {
    struct Row: CustomStringConvertible {
        var key: String
        var code: String
        var exit: Int32
        var advice: String
        var description: String { key }
    }

    /// How a row comes about: the provider, and the project or stand-in as it then is.
    struct Scenario {
        var microsoft = false
        /// Approve the sign-in at the provider (else the user closes the popup).
        var approve = true
        /// What tokenctl's line must say besides the advice (the page's message).
        var said: [String] = []
        var arrange: @Sendable (DaemonHarness, FirebaseHostedStandIn) async throws -> Void = { _, _ in }
    }

    static let user = FederatedStandIn.User(id: "001.hosted.failure", email: "hf@privaterelay.appleid.com")

    /// Microsoft's answer to the handler's code exchange with an expired secret, as Firebase
    /// wraps it (FlutterFlow/flutterflow-issues#2995; the AADSTS text as Microsoft words it,
    /// n8n-io/n8n#22684), with an ID token in it that must not come through.
    static let expiredSecret = "INVALID_IDP_RESPONSE : Error getting access token from microsoft.com, OAuth2 redirect uri is: https://demo-tokend.firebaseapp.com/__/auth/handler, response: OAuth2TokenResponse{params: error=invalid_client&error_description=AADSTS7000222: The provided client secret keys for app '3f1d1ad2-6c59-4d5e-9a0c-2b6a8a8e7f11' are expired. Visit the Azure portal to create new keys for your app: https://aka.ms/NewClientSecret, or consider using certificate credentials for added security: https://aka.ms/certCreds. Trace ID: 57896209-665a-46cb-a383-6ad8ff7e2200&id_token=eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJsZWFrZWQtc2VjcmV0LXN1YmplY3QifQ.c2lnbmF0dXJlLW9mLXRoZS1sZWFrZWQtdG9rZW4, httpMetadata=HttpMetadata{status=401}}"

    static func inject(_ code: String) -> Scenario {
        Scenario { _, standIn in standIn.failNext(code: code, message: "Firebase: Error (\(code)).") }
    }

    static let scenarios: [String: Scenario] = [
        "`auth/popup-closed-by-user`": Scenario(approve: false),
        "`auth/popup-closed-by-user` (Microsoft, an app of one tenant and no `tenant`: AADSTS50194 in the popup)": Scenario(microsoft: true) { _, standIn in
            standIn.registerMicrosoftAppInOneTenant(FederatedStandIn.tenant)
        },
        "`auth/operation-not-allowed`": Scenario { world, _ in world.fake.update { $0.disabledProviders = ["apple.com"] } },
        "`auth/unauthorized-domain`": inject("auth/unauthorized-domain"),
        "`auth/web-storage-unsupported`": inject("auth/web-storage-unsupported"),
        "`auth/popup-blocked`": inject("auth/popup-blocked"),
        "`auth/account-exists-with-different-credential`": inject("auth/account-exists-with-different-credential"),
        "`auth/multi-factor-auth-required`": inject("auth/multi-factor-auth-required"),
        "`auth/invalid-credential` (Microsoft, an expired client secret: `INVALID_IDP_RESPONSE : Error getting access token from microsoft.com, … AADSTS7000222: The provided client secret keys for app '…' are expired. …`)": Scenario(
            microsoft: true, said: ["(the page said: Error getting access token from microsoft.com", "AADSTS7000222: The provided client secret keys", "id_token=[redacted]"]
        ) { world, _ in
            world.fake.update { $0.productionRefusals["signInWithIdp"] = FakeFirebase.Refusal(message: expiredSecret) }
        },
        "`auth/requests-from-referer-<empty>-are-blocked.` (the API key is restricted to websites)": Scenario { world, _ in
            world.fake.update { $0.restrictedAPIKeys["test-api-key"] = .httpReferrer }
        },
        "`auth/user-disabled`": Scenario { world, _ in
            world.fake.disableUser(world.fake.createFederatedUser(email: user.email, provider: "apple.com", rawID: user.id))
        },
        "`auth/admin-restricted-operation` (sign-up off)": Scenario { world, _ in
            world.fake.update { $0.productionRefusals["signInWithIdp"] = FakeFirebase.Refusal(message: "ADMIN_ONLY_OPERATION") }
        },
        "`auth/api-key-not-valid.-please-pass-a-valid-api-key.`": Scenario { world, _ in world.fake.update { $0.invalidAPIKeys = ["test-api-key"] } },
        "`auth/invalid-api-key`": inject("auth/invalid-api-key"),
        "`auth/tenant-id-mismatch`": Scenario { world, _ in
            world.fake.update { $0.productionRefusals["signInWithIdp"] = FakeFirebase.Refusal(message: "TENANT_ID_MISMATCH") }
        },
        "`auth/network-request-failed`": inject("auth/network-request-failed"),
        "`auth/too-many-requests`": Scenario { world, _ in
            world.fake.update { $0.productionRefusals["signInWithIdp"] = FakeFirebase.Refusal(message: "TOO_MANY_ATTEMPTS_TRY_LATER : Too many attempts.") }
        },
    ]

    static func rows() throws -> [Row] {
        let text = try String(contentsOf: Repository.root.appendingPathComponent("README.md"), encoding: .utf8)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let start = try require(lines.firstIndex { $0.hasPrefix("<!-- hosted-errors") }, "README.md has no hosted-errors table")
        var rows: [Row] = []
        for line in lines[(start + 3)...] {
            guard line.hasPrefix("| ") else { break }
            let cells = line.dropFirst(2).dropLast(2).components(separatedBy: " | ")
            guard cells.count == 3, let exit = Int32(cells[1]), let code = cells[0].split(separator: "`").first.map(String.init) else {
                throw HarnessError("README row is not `| error | exit | advice |`: \(line)")
            }
            rows.append(Row(key: cells[0], code: code, exit: exit, advice: cells[2]))
        }
        return rows
    }

    @Test func everyRowOfTheReadmeTableHoldsOnThePageAndInTokenctl() async throws {
        let rows = try Self.rows()
        #expect(rows.count >= 17, "the README table lost rows: \(rows.count)")
        let unscripted = rows.filter { Self.scenarios[$0.key] == nil }
        #expect(unscripted.isEmpty, "README rows without a scenario here: \(unscripted)")
        #expect(Set(Self.scenarios.keys).subtracting(rows.map(\.key)).isEmpty, "scenarios without a README row")
        var mismatches: [String] = []
        for microsoft in [false, true] {
            let issuers: Set<String> = microsoft ? ["https://login.microsoftonline.com/{tenantid}/v2.0"] : [FirebaseHostedStandIn.appleIssuer]
            let id = microsoft ? "microsoft.com" : "apple.com"
            try await SignInWithAppleTests.withHostedHandler(id, issuers: issuers, clientID: SignInWithAppleTests.servicesID) { world, standIn in
                let baseline = world.fake.options
                for row in rows {
                    guard let scenario = Self.scenarios[row.key], scenario.microsoft == microsoft else { continue }
                    world.fake.update { $0 = baseline }
                    standIn.approveNext(as: Self.user)
                    if !scenario.approve { standIn.approveNext(as: nil) }
                    try await scenario.arrange(world, standIn)
                    var page = ""
                    let login = try await OIDCMockTests.tokenctlSigningIn(world, ["login", "work", "--idp", id], url: { $0.hasPrefix("http://localhost:") }) { url in
                        page = try await HeadlessChromium.clickThroughHostedPage(at: url, home: world.keyring.root)
                    }
                    standIn.registerMicrosoftAppInOneTenant(nil)
                    let advice = row.advice.replacingOccurrences(of: "AUTH_DOMAIN", with: standIn.authDomain)
                    let pageHolds = page.trimmingCharacters(in: .whitespacesAndNewlines) == "Sign-in failed (\(row.code)): \(advice)."
                    let lineHolds = login.output.contains("\(row.code): \(advice)") && scenario.said.allSatisfy(login.output.contains)
                    if login.status != row.exit || !pageHolds || !lineHolds || login.output.contains("eyJ") {
                        mismatches.append("\(row.key): exit \(login.status), page \(page), tokenctl \(login.output)")
                    }
                    #expect(try await world.storedSession() == nil)
                }
            }
        }
        #expect(mismatches.isEmpty, "rows that do not hold:\n\(mismatches.joined(separator: "\n"))")
    }
}
