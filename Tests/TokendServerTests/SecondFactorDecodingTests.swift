import Testing
import TokendProtocol
@testable import TokendServer

/// The second factor's request fields (issue 33, item 5), refused before any engine call when
/// they break the op's rules: `handle` and `factor` only where they mean something, a code of 4
/// to 10 digits, `mfa_remove` naming its factor.
@Suite struct SecondFactorDecodingTests {
    @Test(arguments: [
        (#"{"op":"login","id":"t","account":"w","method":"second_factor","secret":"123456"}"#, #"login: "handle""#),
        (#"{"op":"login","id":"t","account":"w","method":"second_factor","handle":"h"}"#, #"login: "secret""#),
        (#"{"op":"login","id":"t","account":"w","method":"second_factor","handle":"h","secret":"12ab56"}"#, #"login: "secret""#),
        (#"{"op":"login","id":"t","account":"w","method":"anonymous","handle":"h"}"#, #"login: "handle""#),
        (#"{"op":"login","id":"t","account":"w","method":"anonymous","factor":"f"}"#, #"login: "factor""#),
        (#"{"op":"login","id":"t","account":"w","method":"email","email":"a@example.com","secret":"pw","factor":"a b"}"#, #"login: "factor""#),
        (#"{"op":"account","id":"t","account":"w","action":"mfa_enroll","handle":"h","secret":"123"}"#, #"account: "secret""#),
        (#"{"op":"account","id":"t","account":"w","action":"mfa_remove"}"#, #"account: "factor""#),
        (#"{"op":"account","id":"t","account":"w","action":"mfa_enroll","handle":"h","secret":"123456","name":""}"#, #"account: "name""#),
        (#"{"op":"account","id":"t","account":"w","action":"mfa_enroll","handle":"h","secret":"123456","name":"a\u001bb"}"#, #"account: "name""#),
        (#"{"op":"login","id":"t","account":"w","handle":1}"#, "handle"),
    ])
    func aSecondFactorFieldThatBreaksTheRulesIsNamed(_ line: String, _ field: String) async {
        await CommandDecodingTests().expectBadRequest(line, id: .string("t"), mentions: field)
    }

    @Test func aSecondFactorStepReachesTheEngineWithItsHandleAndCode() async {
        let stub = StubbedHandler()
        _ = await stub.respond(#"{"op":"account","id":"t","account":"w","action":"mfa_enroll","handle":"h","secret":" 123456 ","name":"laptop"}"#)
        _ = await stub.respond(#"{"op":"account","id":"t","account":"w","action":"mfa_remove","factor":"f1"}"#)
        _ = await stub.respond(#"{"op":"account","id":"t","account":"w","action":"mfa_enroll"}"#)
        #expect(stub.engine.calls == [
            .finishSecondFactorEnrollment(account: "w", handle: "h", code: "123456", displayName: "laptop", timeout: Command.defaultTimeout),
            .removeSecondFactor(account: "w", factor: "f1", timeout: Command.defaultTimeout),
            .startSecondFactorEnrollment(account: "w", timeout: Command.defaultTimeout),
        ])
    }
}
