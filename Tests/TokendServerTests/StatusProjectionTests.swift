import Testing
@testable import TokendCore
import TokendKeyring
import TokendProtocol
@testable import TokendServer
import TokendTestSupport

/// `status` as a pure projection of one account, as the status handler writes it: no engine, no
/// keyring, no clock but a date.
@Suite struct StatusProjectionTests {
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    func account(_ machine: AccountMachine, unsaved: Bool = false) -> AccountState {
        var account = AccountState(
            configuration: ManualWorld.configuration(["work"]).accounts["work"]!, machine: machine, provider: ScriptedProvider(), incarnation: 1)
        account.unsaved = unsaved
        return account
    }

    var held: AccountMachine {
        AccountMachine(tokens: TokenSet(refreshToken: "rt", idToken: "id", idTokenExpiresAt: t0.addingTimeInterval(3600), issuedAt: t0))
    }

    @Test func anActiveAccountShowsItsExpiryAndNextRefresh() {
        let status = AccountStatus(AccountReport(account(held), named: "work", keyring: .available, at: t0.addingTimeInterval(0.5)))
        #expect(status.state == "active")
        #expect(status.expiresIn == 3599, "rounded down: never more life than the token has")
        #expect(status.nextRefresh == Timestamp.format(t0.addingTimeInterval(3300)))
        #expect(status.keyring == "available")
        #expect(status.message == nil)
    }

    @Test func aBackoffSaysHowManyFailuresAndWhenNext() {
        var machine = held
        let ticket = machine.startRefresh(at: t0)!
        _ = machine.finish(ticket, .transient(RefreshFailure(code: "http_503", message: "HTTP 503"), retryAfter: 60), at: t0, jitterDraw: 0)
        let status = AccountStatus(AccountReport(account(machine), named: "work", keyring: .available, at: t0))
        #expect(status.state == "retrying")
        #expect(status.message == "refresh failed 1 time(s) in a row; next try at \(Timestamp.format(t0.addingTimeInterval(60)))")
        #expect(status.lastError?.code == "http_503")
    }

    /// A locked keyring shows on every account; an unsaved session says so itself.
    @Test func theKeyringsMoodAndAnUnsavedSessionShow() {
        let status = AccountStatus(AccountReport(account(held, unsaved: true), named: "work", keyring: .locked, at: t0))
        #expect(status.keyring == "locked")
        #expect(status.unsaved == true)
    }

    @Test func aPhaseThatRefusesGivesItsReason() {
        var machine = held
        machine.forget(reason: "logged out; run: tokenctl login work")
        let status = AccountStatus(AccountReport(account(machine), named: "work", keyring: .available, at: t0))
        #expect(status.state == "needs_login")
        #expect(status.message == "logged out; run: tokenctl login work")
        #expect(status.expiresAt == nil)
    }
}
