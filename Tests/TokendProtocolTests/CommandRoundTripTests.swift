import Testing
import TokendCore
@testable import TokendProtocol

/// A command is what both ends mean by a request: what tokenctl encodes, the daemon's decoder
/// reads back as the same command, for every op and every `account` action.
@Suite struct CommandRoundTripTests {
    static let commands: [Command] = [
        .hello,
        .token(TokenArgs(account: "work")),
        .token(TokenArgs(account: "work", minValid: 120, kind: .access, timeout: 5, scope: "read:b read:a", audience: "https://api.example/")),
        .token(TokenArgs(account: "quote\" back\\slash ünï", minValid: 0.25, kind: .id, timeout: 0)),
        .token(TokenArgs(account: "api", audience: "urn:x")),
        .list(StatusArgs()),
        .list(StatusArgs(account: "work")),
        .status(StatusArgs()),
        .status(StatusArgs(account: "work")),
        .refresh(RefreshArgs(account: "work", timeout: 7)),
        .import(ImportArgs(account: "work", refreshToken: "refresh-canary")),
        .import(ImportArgs(
            account: "work", refreshToken: "refresh-canary", idToken: "id-canary", accessToken: "access-canary", expiresAt: "2026-01-02T03:04:05Z",
            timeout: 12)),
        .login(LoginArgs(account: "corp", method: .browser, timeout: 60)),
        .login(LoginArgs(account: "corp", method: .device, scopes: ["openid", "email"])),
        .login(LoginArgs(account: "fb", method: .email, email: "ada@example.com", create: true, secret: " pass word ")),
        .login(LoginArgs(account: "fb", method: .anonymous)),
        .login(LoginArgs(account: "fb", method: .customToken, secret: "custom-canary")),
        .login(LoginArgs(account: "fb", method: .google, identityProvider: "google.com")),
        .login(LoginArgs(account: "fb", method: .idp, timeout: 90, identityProvider: "github.com", device: true)),
        .login(LoginArgs(account: "fb", method: .email, email: "ada@example.com", secret: "pw-canary", factor: "totp-1")),
        .login(LoginArgs(account: "fb", method: .google, identityProvider: "google.com", factor: "totp-2")),
        .login(LoginArgs(account: "fb", method: .secondFactor, secret: "123456", handle: "handle-canary")),
        .account(AccountArgs(account: "fb", action: .show(timeout: 30))),
        .account(AccountArgs(account: "fb", action: .verifyEmail(timeout: 3))),
        .account(AccountArgs(account: "fb", action: .resetPassword(email: nil))),
        .account(AccountArgs(account: "fb", action: .resetPassword(email: "bo@example.com"))),
        .account(AccountArgs(account: "fb", action: .upgradeWithEmail(email: "hal@example.com", password: "pw-canary", timeout: 30))),
        .account(AccountArgs(account: "fb", action: .upgradeWithIdentityProvider("microsoft.com", device: false, timeout: 300))),
        .account(AccountArgs(account: "fb", action: .upgradeWithIdentityProvider("github.com", device: true, timeout: 90))),
        .account(AccountArgs(account: "fb", action: .delete(confirmed: false, timeout: 30))),
        .account(AccountArgs(account: "fb", action: .delete(confirmed: true, timeout: 30))),
        .account(AccountArgs(account: "fb", action: .startSecondFactorEnrollment(timeout: 30))),
        .account(AccountArgs(account: "fb", action: .finishSecondFactorEnrollment(handle: "handle-canary", code: "654321", name: "tokend on canary", timeout: 30))),
        .account(AccountArgs(account: "fb", action: .removeSecondFactor("totp-1", timeout: 30))),
        .logout(LogoutArgs(account: "work")),
        .watch(WatchArgs()),
        .watch(WatchArgs(account: "work", profile: true)),
        .reload,
        .store(StoreArgs(move: "work", to: .tpm2)),
    ]

    @Test(arguments: commands)
    func aCommandDecodesBackEqual(_ command: Command) throws {
        #expect(try Command(command.fields(id: .number(1))) == command)
    }

    /// Through the bytes: the line the client writes, framed and decoded as the daemon does.
    @Test(arguments: commands)
    func aCommandsLineDecodesBackEqual(_ command: Command) throws {
        let line = command.line(id: .number(7))
        #expect(line.last == UInt8(ascii: "\n"))
        #expect(line.dropLast().allSatisfy { $0 != UInt8(ascii: "\n") }, "one line")
        let request = WireCoding.decodeRequest(Array(line.dropLast()))
        #expect(request.id == .number(7))
        #expect(try request.command.get() == command)
    }

    @Test func everyOpAndEveryAccountActionIsCovered() {
        #expect(Set(Self.commands.map(\.op.rawValue)) == Set(Op.allCases.map(\.rawValue)))
        let actions = Self.commands.compactMap { command -> String? in
            guard case .account(let args) = command else { return nil }
            return args.action.verb.rawValue
        }
        #expect(Set(actions) == Set(AccountAction.allCases.map(\.rawValue)))
        let methods = Self.commands.compactMap { command -> String? in
            guard case .login(let args) = command else { return nil }
            return args.method.rawValue
        }
        #expect(Set(methods) == Set(LoginMethod.allCases.map(\.rawValue)))
    }

    /// The hand-written `token` line is the encoder's, byte for byte, whatever fields it carries.
    @Test(arguments: commands)
    func aTokenLineIsTheEncodersByteForByte(_ command: Command) throws {
        guard case .token(let args) = command, args.account.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x80 }) else { return }
        for id: RequestID? in [nil, .number(1), .number(-42)] {
            let fast = try #require(TokenExchangeCoding.requestLine(command.fields(id: id)))
            #expect(fast == WireCoding.encodeLine(command.fields(id: id)))
        }
    }

    /// What the commands carry that the defaults fill in: absent `min_valid` stays absent.
    @Test func defaultsAreTheDaemonsAndAbsentFieldsStayAbsent() throws {
        let args = TokenArgs(account: "work")
        #expect(args.minValid == TokenArgs.defaultMinValid)
        #expect(args.timeout == Command.defaultTimeout)
        #expect(args.narrowing == nil)
        let line = String(decoding: Command.token(args).line(id: .number(1)), as: UTF8.self)
        #expect(line == #"{"account":"work","id":1,"op":"token","timeout":30}"# + "\n")
        let list = String(decoding: Command.list(StatusArgs()).line(id: .number(1)), as: UTF8.self)
        #expect(list == #"{"id":1,"op":"list"}"# + "\n")
    }

    /// Secrets stay out of descriptions.
    @Test func aCommandIsDescribedByItsOpAlone() {
        let login = Command.login(LoginArgs(account: "fb", method: .email, email: "a@b", secret: "pw-canary"))
        #expect(login.description == "Command(login)")
        #expect(!"\(login)".contains("canary"))
    }
}
