import Testing
import TokendCore
import TokendProtocol
@testable import TokendServer
import TokendTestClock

/// A consumer's policy as its socket applies it (issue 49 item 1): the op first, then the
/// account (outside the policy: the unknown-account reply, word for word), then the token's
/// kind, audience, scopes and `min_valid`.
@Suite struct ConsumerGateTests {
    static func gate(_ edit: (inout ConsumerPolicy) -> Void = { _ in }) -> ConsumerGate {
        var policy = ConsumerPolicy(name: "build", socket: "/tmp/b.sock", accounts: ["work"])
        edit(&policy)
        return ConsumerGate(policy: policy, defaultKinds: ["work": .id])
    }

    static func token(_ account: String = "work", kind: TokenKind? = nil, minValid: Double = 60, scope: String? = nil, audience: String? = nil) -> Command {
        .token(TokenArgs(account: account, minValid: minValid, kind: kind, scope: scope, audience: audience))
    }

    func refusal(_ verdict: ConsumerGate.Verdict) -> TokendError? {
        if case .refused(let error) = verdict { return error }
        return nil
    }

    @Test func opsOutsideThePolicyAreForbiddenWhateverTheAccount() {
        let gate = Self.gate()
        for command: Command in [
            .refresh(RefreshArgs(account: "work")), .logout(LogoutArgs(account: "other")), .watch(WatchArgs(account: nil)),
            .import(ImportArgs(account: "nobody", refreshToken: "r")), .reload,
        ] {
            let error = refusal(gate.check(command))
            #expect(error?.code == .forbidden, "\(command)")
            #expect(error?.message.contains("its policy allows: status, token") == true, "\(String(describing: error))")
        }
        #expect(gate.check(.hello) == .allowed)
        #expect(gate.check(.status(StatusArgs())) == .allowed)
        #expect(gate.check(.list(StatusArgs(account: "work"))) == .allowed)
    }

    @Test func anAccountOutsideThePolicyIsAnUnknownName() {
        let gate = Self.gate()
        for command in [Self.token("other"), .status(StatusArgs(account: "other")), Self.token("no-such")] {
            let error = refusal(gate.check(command))
            #expect(error == Advice.missingAccount(command.account!, configurationProblem: nil))
        }
        // Its own account: allowed; forbidden checks come after the account's.
        #expect(gate.check(Self.token()) == .allowed)
        let strict = Self.gate { $0.kinds = [.access] }
        #expect(refusal(strict.check(Self.token("other", kind: .id)))?.code == .unknownAccount)
    }

    @Test func kindsAudiencesScopesAndMinValid() {
        let kinds = Self.gate { $0.kinds = [.access] }
        #expect(refusal(kinds.check(Self.token()))?.code == .forbidden, "the account's default kind (id) is checked")
        #expect(kinds.check(Self.token(kind: .access)) == .allowed)

        let audiences = Self.gate { $0.audiences = ["api"] }
        #expect(refusal(audiences.check(Self.token()))?.message.contains("one of these audiences: api") == true)
        #expect(refusal(audiences.check(Self.token(audience: "other")))?.code == .forbidden)
        #expect(audiences.check(Self.token(audience: "api")) == .allowed)

        let scopes = Self.gate { $0.scopes = ["read", "list"] }
        #expect(refusal(scopes.check(Self.token()))?.code == .forbidden, "the full token is not within its scopes")
        #expect(refusal(scopes.check(Self.token(scope: "read write")))?.code == .forbidden)
        #expect(scopes.check(Self.token(scope: "read  list")) == .allowed)

        let ceiling = Self.gate { $0.maxMinValid = 300 }
        #expect(ceiling.check(Self.token(minValid: 300)) == .allowed)
        let above = refusal(ceiling.check(Self.token(minValid: 301)))
        #expect(above?.code == .forbidden && above?.message.contains("at most 300 s") == true)
    }

    /// A reload's policy applies to the gate every open connection shares, from its next line.
    @Test func anUpdateAppliesAtOnce() {
        let gate = Self.gate()
        #expect(refusal(gate.check(Self.token("home")))?.code == .unknownAccount)
        gate.update(policy: ConsumerPolicy(name: "build", accounts: ["home"], operations: [.token, .refresh]), defaultKinds: ["home": .access])
        #expect(gate.check(Self.token("home")) == .allowed)
        #expect(refusal(gate.check(Self.token("work")))?.code == .unknownAccount)
        #expect(gate.check(.refresh(RefreshArgs(account: "home"))) == .allowed)
        #expect(refusal(gate.check(.status(StatusArgs())))?.code == .forbidden)
    }

    /// The router behind a gate: refusals on the fast path (`answerAtOnce`) and the engine's
    /// path alike, byte for byte what the main socket says of an unknown name; `status` lists
    /// only the consumer's accounts; `hello` lists only its ops.
    @Test func theRouterBehindAGate() async throws {
        var script = StubEngine.Script()
        script.statuses = .failure(Advice.missingAccount("no-such", configurationProblem: nil))
        let stub = StubbedHandler(script)
        let main = stub.handler
        let consumer = main.scoped(to: Self.gate())
        let line = Array(#"{"op":"token","id":7,"account":"other"}"#.utf8)
        let fast = try #require(consumer.answerAtOnce(WireCoding.decodeRequest(line)))
        guard case .response(let slow) = await consumer.handle(line: line) else { Issue.record("a stream"); return }
        let unknownLine = Array(#"{"op":"status","id":7,"account":"no-such"}"#.utf8)
        guard case .response(let onMain) = await main.handle(line: unknownLine) else { Issue.record("a stream"); return }
        let expected = String(decoding: WireCoding.encodeLine(onMain), as: UTF8.self).replacingOccurrences(of: "no-such", with: "other")
        #expect(String(decoding: WireCoding.encodeLine(fast), as: UTF8.self) == expected)
        #expect(String(decoding: WireCoding.encodeLine(slow), as: UTF8.self) == expected)
        #expect(stub.engine.calls.count == 1, "only the main socket's request reached the engine")

        let hello = try #require(consumer.answerAtOnce(WireCoding.decodeRequest(Array(#"{"op":"hello"}"#.utf8))))
        #expect(hello.capabilities == ["hello", "token", "list", "status"])
    }
}
