import Foundation
import Synchronization
import Testing
import TokendCore
import TokendProtocol
import TokendFakes
import TokendTestSupport

/// Issue 3, item 9: large tokens and many accounts.
@Suite struct LargeAndManyTests {
    /// A 16 KiB ID token and a 16 KiB refresh token go in through `tokenctl import`, into the
    /// keyring, and come back byte for byte — from memory, from the keyring, and after a restart.
    /// (kubelogin's keyring overflowed on a large token.)
    @Test func sixteenKiBTokensRoundTripThroughTheKeyring() async throws {
        try await withWorld { world in
            // The provider is down for the import's refresh, so the big refresh token is kept as is.
            world.fake.faults.inject(.status(503), forSeconds: 60)
            let refreshToken = "rt-" + String((0..<16 * 1024).map { _ in "abcdefghijklmnopqrstuvwxyz0123456789-_".randomElement()! })
            let padding = String(repeating: "x", count: 16 * 1024)
            let payload = #"{"exp":\#(Int(Date().timeIntervalSince1970) + 3600),"iat":\#(Int(Date().timeIntervalSince1970)),"pad":"\#(padding)"}"#
            let idToken = "eyJhbGciOiJub25lIn0." + JWTClaims.base64URLEncode(Data(payload.utf8)) + "."
            #expect(idToken.utf8.count > 16 * 1024)
            let json = #"{"refresh_token":"\#(refreshToken)","id_token":"\#(idToken)"}"#
            let imported = try await world.tokenctl(["import", "work"], stdin: json)
            #expect(imported.status == 75, "stored, but the provider is down: \(imported.stderr)")
            #expect(try await world.tokenctl(["token", "work", "--kind", "id"]).stdout == idToken + "\n")
            let stored = try #require(try await world.storedSession())
            #expect(stored.refreshToken == refreshToken)
            #expect(stored.idToken == idToken)
            world.kill9()
            try await world.startDaemon()
            #expect(try await world.tokenctl(["token", "work", "--kind", "id"]).stdout == idToken + "\n")
            #expect(try await world.storedSession()?.refreshToken == refreshToken)
        }
    }

    /// 100 accounts with 30-second tokens stay fresh for five minutes, a client asking all the
    /// while; refreshes spread over many seconds instead of bunching.
    @Test func aHundredAccountsStayFreshForFiveMinutes() async throws {
        let accounts = (0..<100).map { String(format: "acct-%03d", $0) }
        var options = FakeFirebase.Options()
        options.lifetime = 30
        try await withWorld(options: options, accounts: accounts) { world in
            // One connection imports them all, one after the other, as a user adding accounts would
            // (its blocking calls on a thread of their own, off the cooperative pool).
            let client = SharedClient(try BlockingClient(path: world.socketPath))
            client.connection.setReadTimeout(seconds: 30)
            for account in accounts {
                let session = world.fake.createUser()
                let response = try await client.call(.import(ImportArgs(account: account, refreshToken: session.refreshToken)))
                #expect(response.ok, "\(account): \(String(describing: response.error))")
            }
            let start = Date()
            let end = start.addingTimeInterval(300)
            var failures: [String] = []
            var answers = 0
            var index = 0
            while Date() < end {
                let account = accounts[index % accounts.count]
                let asked = Date()
                let response = try await client.call(.token(TokenArgs(account: account, minValid: 1)))
                if let token = response.token, let expiry = JWTClaims(token: token)?.expiresAt, expiry.timeIntervalSince(asked) >= 0.99 {
                    answers += 1
                } else {
                    failures.append("\(account): \(response.error.map { "\($0)" } ?? "token dying too soon")")
                }
                index += 1
                try await Task.sleep(for: .milliseconds(20))  // client pacing: ~50 requests a second
            }
            #expect(failures.isEmpty, "\(failures.count) failures: \(failures.prefix(5))")
            let refreshes = world.fake.requests.filter { $0.status == 200 && $0.at > start }
            #expect(refreshes.count >= 100 * 12, "each account refreshed about every 20 s: \(refreshes.count)")
            var perSecond: [Int: Int] = [:]
            for refresh in refreshes { perSecond[Int(refresh.at.timeIntervalSince1970), default: 0] += 1 }
            let busiest = perSecond.values.max() ?? 0
            let seconds = Int(Date().timeIntervalSince(start))
            print("hundred accounts: \(answers) answers, \(failures.count) failures, \(refreshes.count) refreshes over \(seconds) s, in \(perSecond.count) distinct seconds, busiest second \(busiest)")
            #expect(perSecond.count >= seconds / 2, "refreshes happen in at least half of all seconds")
            #expect(busiest <= 40, "no second holds more than 40 of the 100 accounts' refreshes")
        }
    }
}
