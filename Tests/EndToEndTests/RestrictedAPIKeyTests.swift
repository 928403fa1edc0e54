import Foundation
import Testing
import TokendCore
import TokendFakes
import TokendProtocol
import TokendTestSupport

/// Issue 33, item 7: an API key whose restrictions (HTTP referrer, IP address, API) block tokend
/// is answered 403 `PERMISSION_DENIED` with the restriction's `ErrorInfo.reason` on refresh and
/// sign-in alike. tokenctl names the restriction and the fix (78), and a refresh refused so
/// loses nothing: not the keyring's session, not across a kill -9 and a restart while the key is
/// still blocked; once the key is fixed, `tokenctl token` serves with no new login.
/// Issue 44, item 3: the same for a key restricted to Android or iOS apps (the key of an app's
/// `google-services.json` / `GoogleService-Info.plist`) and for an API disabled in the key's
/// project (`SERVICE_DISABLED`), whose English sentences were once taken for the code.
@Suite struct RestrictedAPIKeyTests {
    /// The fix tokenctl names for `restriction` (every one has its own words).
    static func fix(_ restriction: FakeFirebase.APIKeyRestriction) -> String {
        RefreshFailure.apiKeyRefusals[restriction.rawValue]?.fix ?? "(no fix for \(restriction.rawValue))"
    }

    @Test(arguments: [FakeFirebase.APIKeyRestriction.service, .androidApp, .iosApp, .serviceDisabled])
    func aRefreshRefusedForTheKeysRestrictionKeepsTheSessionAcrossAKillAndServesOnceTheKeyIsFixed(restriction: FakeFirebase.APIKeyRestriction) async throws {
        try await withWorld { world in
            let session = try await world.importNewUser()
            world.fake.update { $0.restrictedAPIKeys["test-api-key"] = restriction }

            let refused = try await world.tokenctl(["refresh", "work"])
            #expect(refused.status == 78, "\(refused.stderr)")
            #expect(refused.stderr.contains("\(restriction.rawValue): ") && refused.stderr.contains(Self.fix(restriction)), "\(refused.stderr)")
            #expect(refused.stderr.contains("fix the key or its project in the Google Cloud console"), "\(refused.stderr)")
            #expect(try await world.storedSession()?.refreshToken == session.refreshToken, "the refusal touched the stored session")

            // Killed while blocked, restarted while still blocked: the stored session is read
            // back, a refresh is refused the same way, and nothing is deleted.
            world.kill9()
            try await world.startDaemon()
            let again = try await world.tokenctl(["refresh", "work"])
            #expect(again.status == 78, "\(again.stderr)")
            #expect(again.stderr.contains(restriction.rawValue), "\(again.stderr)")
            #expect(try await world.status().state == "config_error")
            #expect(try await world.storedSession()?.refreshToken == session.refreshToken, "the restart lost the stored session")

            // The key is fixed in the console (the config does not change). A token longer-lived
            // than the held one makes the request refresh: it is served, with no new login.
            world.fake.update {
                $0.restrictedAPIKeys = [:]
                $0.lifetime = 7200
            }
            let served = try await world.tokenctl(["token", "work", "--min-valid", "3700"])
            #expect(served.status == 0, "\(served.stderr)")
            #expect(world.fake.newestRefreshToken(uid: session.uid) != nil)
            #expect(try await world.status().state == "active")
        }
    }

    /// Each restriction at sign-in: 78, the reason and the fix; nothing stored.
    @Test(arguments: FakeFirebase.APIKeyRestriction.allCases)
    func aSignInRefusedForTheKeysRestrictionNamesItAndTheFix(restriction: FakeFirebase.APIKeyRestriction) async throws {
        try await withWorld { world in
            world.fake.update { $0.restrictedAPIKeys["test-api-key"] = restriction }
            let run = try await world.tokenctl(["login", "work", "--anonymous"])
            #expect(run.status == 78, "\(run.stderr)")
            #expect(run.stderr.contains("\(restriction.rawValue): ") && run.stderr.contains(Self.fix(restriction)), "\(run.stderr)")
            #expect(try await world.storedSession() == nil)
        }
    }
}
