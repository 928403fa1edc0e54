import Foundation
import Testing
import TokendCore
import TokendTestSupport

/// `tokenctl exec-credential --format google` as the executable source of a Google external
/// account, run by the real client, google-auth from PyPI (`Tests/Clients/google_external_account.py`),
/// with README's configuration as written (but for the STS address), against a loopback stand-in
/// for Google's STS (issue 21, item 2).
@Suite struct GoogleExecutableCredentialTests {
    static var script: String { Repository.path("Tests/Clients/google_external_account.py") }

    struct Outcome: Decodable {
        var ok: Bool
        var error: String?
        var received: [[String: String]]
    }

    /// Runs google-auth's refresh through tokenctl; what it ended with and what STS received.
    static func refresh(_ world: DaemonHarness, subjectTokenType: String? = nil) async throws -> Outcome {
        var environment = world.environment
        environment["GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES"] = "1"
        let readme = Repository.path("README.md")
        let arguments = [script, readme, DaemonHarness.binDirectory + "/tokenctl"] + (subjectTokenType.map { [$0] } ?? [])
        let childEnvironment = environment
        let run = try await offPool { try ChildProcess.run(Repository.clientsPython, arguments, environment: childEnvironment) }
        guard run.status == 0, let line = run.stdout.split(separator: "\n").last else {
            throw HarnessError("the google-auth client failed (\(run.status)): \(run.stderr)")
        }
        return try JSONDecoder().decode(Outcome.self, from: Data(line.utf8))
    }

    @Test func googleAuthExchangesTheAccountsLiveTokenAtSTS() async throws {
        let world = try await DaemonHarness.start()
        try await withTearDown(world, tearDown: { await $0.shutdown() }) { world in
            try await world.importNewUser()
            let live = try await world.tokenctl(["token", "work"]).stdout.trimmed
            let outcome = try await Self.refresh(world)
            #expect(outcome.ok, "google-auth: \(outcome.error ?? "")")
            let exchange = try #require(outcome.received.first)
            #expect(exchange["subject_token"] == live, "STS got the account's live ID token")
            #expect(exchange["subject_token_type"] == "urn:ietf:params:oauth:token-type:id_token")
        }
    }

    /// A JWT subject token type is served too; google-auth passes it in
    /// GOOGLE_EXTERNAL_ACCOUNT_TOKEN_TYPE and checks that the answer names the same.
    @Test func aJWTSubjectTokenTypeIsAnsweredInKind() async throws {
        let world = try await DaemonHarness.start()
        try await withTearDown(world, tearDown: { await $0.shutdown() }) { world in
            try await world.importNewUser()
            let outcome = try await Self.refresh(world, subjectTokenType: "urn:ietf:params:oauth:token-type:jwt")
            #expect(outcome.ok, "google-auth: \(outcome.error ?? "")")
            #expect(outcome.received.first?["subject_token_type"] == "urn:ietf:params:oauth:token-type:jwt")
        }
    }

    /// No session: google-auth gets `success: false` with tokenctl's code and next step, and
    /// STS is never asked.
    @Test func withoutASessionGoogleAuthIsToldWhyAndSTSIsNotAsked() async throws {
        let world = try await DaemonHarness.start()
        try await withTearDown(world, tearDown: { await $0.shutdown() }) { world in
            let outcome = try await Self.refresh(world)
            #expect(!outcome.ok)
            #expect(outcome.received.isEmpty, "no exchange without a token")
            let error = outcome.error ?? ""
            #expect(error.contains("needs_login") && error.contains("tokenctl login work"), "\(error)")
        }
    }

    /// A SAML subject token type is a configuration mistake: said so, with the types to use.
    @Test func aSubjectTokenTypeTokendCannotServeIsNamed() async throws {
        let world = try await DaemonHarness.start()
        try await withTearDown(world, tearDown: { await $0.shutdown() }) { world in
            try await world.importNewUser()
            let outcome = try await Self.refresh(world, subjectTokenType: "urn:ietf:params:oauth:token-type:saml2")
            #expect(!outcome.ok)
            #expect(outcome.received.isEmpty)
            #expect((outcome.error ?? "").contains("subject_token_type"), "\(outcome.error ?? "")")
        }
    }
}
