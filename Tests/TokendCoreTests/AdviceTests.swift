import Testing
import TokendCore

/// `Advice`, the one place tokend words what it cannot do (TokendCore, Account/Advice.swift):
/// the account's own names in place of the providers' placeholders, the method list a login
/// refusal names, a broken file blamed before a typo, and a next step in every refusal that
/// promises one. Pure: no engine, no daemon types (it takes names and mapped errors).
@Suite struct AdviceTests {
    @Test func aProvidersFailureNamesTheAccountsOwnCommands() {
        let said = TokendError(
            .needsLogin, "EMAIL_NOT_FOUND: sign in again: tokenctl login ACCOUNT, or tokenctl account mfa enroll ACCOUNT; set [account.NAME.api_key]")
        let advice = Advice.management(said, account: "work")
        #expect(advice.code == .needsLogin)
        #expect(advice.message == "EMAIL_NOT_FOUND: sign in again: tokenctl login work, or tokenctl account mfa enroll work; set [account.work.api_key]")
    }

    @Test func aLoginByAMethodNotOfferedNamesTheOnesThatAre() {
        #expect(Advice.methodNotOffered("email", offered: ["email", "anonymous"], account: "work", kind: "firebase") == nil)
        let refusal = Advice.methodNotOffered("email", offered: ["browser", "device"], account: "corp", kind: "oidc")
        #expect(refusal?.code == .badRequest)
        #expect(refusal?.message == "corp is a oidc account, which signs in with method browser or device, not email (see tokenctl login --help)")
    }

    @Test func aMissingAccountBlamesABrokenFileFirst() {
        #expect(Advice.missingAccount("wrok", configurationProblem: nil) == TokendError(.unknownAccount, "no account named \"wrok\" is configured"))
        let broken = Advice.missingAccount("work", configurationProblem: "config.toml:3: unknown key \"refersh_before\"")
        #expect(broken == TokendError(.configError, "config.toml:3: unknown key \"refersh_before\""))
    }

    /// A keyring failure keeps its code (the exit code follows it) and gains what to do next.
    @Test func aKeyringFailureAfterTheFactSaysWhatStillHappened() {
        let locked = AccountTransitionTests.KeyringFailure("locked")
        let logout = Advice.logoutNotDeleted(locked, account: "work")
        #expect(logout.code == .keyringLocked)
        #expect(logout.message == "logged out in memory, but the stored session could not be deleted (keyring locked); run logout again once the keyring is usable")
        let deleted = Advice.deletedNotForgotten(locked, account: "work")
        #expect(deleted.code == .keyringLocked && deleted.message.hasSuffix("run tokenctl logout work once the keyring is usable"))
    }

    /// Each refusal a user can act on ends in the action: a sentence that loses it fails here.
    @Test func everyRefusalEndsInWhatToDoNext() {
        let refusals: [TokendError] = [
            Advice.notReadYet("work"), Advice.noFreshToken(within: 5), Advice.noFreshToken(within: 5, scope: TokenScope(scopes: ["read"])),
            Advice.refreshStillRunning("work"), Advice.shuttingDown, Advice.repointedDuringSignIn("work"), Advice.overtakenDuringSignIn("work"),
            Advice.noEmailToReset("work"), Advice.changedWithoutRefreshToken(next: "tokenctl login work"),
            Advice.anotherUsersSession(next: "tokenctl login work"),
            Advice.noUserToDelete("work"),
        ]
        let nextStep = /(try again|tokenctl [a-z]|sign in|run |ask )[^;:]*$/
        for refusal in refusals {
            #expect(refusal.message.firstMatch(of: nextStep) != nil, "no next step at the end of: \(refusal.message)")
        }
        #expect(Advice.loggedOut("work").hasSuffix("tokenctl login work") && Advice.userDeleted("work").hasSuffix("tokenctl login work"))
    }
}
