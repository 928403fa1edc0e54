import TokendCore
import TokendProtocol
import Testing

@testable import TokenctlKit

@Suite("Status table")
struct StatusTableTests {
    static let now = Timestamp.parse("2025-03-01T12:00:00Z")!

    static var accounts: [AccountStatus] {
        var work = AccountStatus(name: "work", provider: "firebase", state: "active", keyring: "available")
        work.expiresIn = 252
        work.expiresAt = "2025-03-01T12:04:12Z"
        work.lastRefresh = "2025-03-01T11:59:48Z"
        work.store = "tpm2"
        var corp = AccountStatus(name: "corp", provider: "oidc", state: "needs_login", keyring: "available")
        corp.lastRefresh = "2025-03-01T10:30:00Z"
        corp.store = "secret-service"
        corp.message = "the provider revoked the session"
        corp.lastError = RefreshFailure(code: "invalid_grant", message: "Token is not active")
        var home = AccountStatus(name: "home", provider: "oidc", state: "retrying", keyring: "locked")
        home.expiresIn = -3
        home.unsaved = true
        home.lastError = RefreshFailure(code: "http_503", message: "Service Unavailable")
        return [work, corp, home]
    }

    @Test func rendersAlignedColumns() {
        let expected = """
            ACCOUNT  PROVIDER  STATE        EXPIRES IN  LAST REFRESH  STORE           KEYRING           LAST ERROR/MESSAGE
            work     firebase  active       4m 12s      12s ago       tpm2            available         -
            corp     oidc      needs_login  -           1h 30m ago    secret-service  available         the provider revoked the session; invalid_grant: Token is not active
            home     oidc      retrying     expired     -             -               locked (unsaved)  http_503: Service Unavailable

            """
        #expect(StatusTable.render(Self.accounts, now: Self.now, width: nil) == expected)
    }

    @Test func cutsLinesToTheTerminalWidth() {
        let lines = StatusTable.render(Self.accounts, now: Self.now, width: 60).split(separator: "\n")
        #expect(lines.count == 4)
        for line in lines { #expect(line.count <= 60) }
        #expect(lines[2].hasSuffix("…"))
        #expect(lines[1] == "work     firebase  active       4m 12s      12s ago       t…")
    }

    @Test func expiryFallsBackToExpiresAt() {
        var account = AccountStatus(name: "a", provider: "oidc", state: "active", keyring: "available")
        account.expiresAt = "2025-03-01T13:00:00Z"
        #expect(StatusTable.row(for: account, now: Self.now)[3] == "1h")
    }

    @Test func noAccounts() {
        #expect(StatusTable.render([], now: Self.now, width: nil) == "No accounts are configured.\n")
    }

    @Test func listIsTabSeparated() {
        #expect(Tokenctl.List.render(Self.accounts) == "work\tfirebase\tactive\ncorp\toidc\tneeds_login\nhome\toidc\tretrying\n")
    }
}
