import Foundation
import Testing
import TokendFakes
import TokendProviders

/// The one fake kit: a fault on any route of any fake, played alike over loopback and in-process
/// through the providers' HTTP transport (no socket), and aimed over any fake's control plane.
@Suite("Fake kit")
struct FakeKitTests {
    typealias Mode = FakeFirebase.Serving

    /// Short, so that hangs and trickles end quickly; nothing here is timed.
    static let deadline = 2.0

    /// What a client made of one exchange.
    enum Seen: Equatable, Sendable {
        case answer(Int)
        case timeout
        case network
    }

    /// One exchange on a transport of its own, shut down after.
    static func send(_ request: HTTPRequest, through transport: HTTPTransport) async -> (Seen, TokendProviders.HTTPAnswer?) {
        let result = await transport.send(request)
        await transport.shutdown()
        switch result {
        case .success(let answer): return (.answer(answer.status), answer)
        case .failure(let failure): return (failure.kind == .timeout ? .timeout : .network, nil)
        }
    }

    static func loopback() -> HTTPTransport { HTTPTransport(environment: [:], deadline: deadline) }

    /// A fault on a sign-in route of the fake Firebase (faults used to reach only its token
    /// endpoint): the sign-up gets it, with its headers; the token endpoint does not.
    @Test(arguments: Mode.allCases)
    func aFaultOnAFirebaseSignInRoute(_ mode: Mode) async throws {
        let fake = try await FakeFirebase.start(serving: mode)
        let transport = fake.transport(deadline: Self.deadline)
        let signUp = "http://\(fake.emulatorHost)/identitytoolkit.googleapis.com/v1/accounts:signUp?key=k"
        fake.faults.inject(.status(503, headers: ["X-Fault": "kit"]), count: 1, on: "/identitytoolkit.googleapis.com/*")
        let (seen, answer) = await Self.send(.json(signUp, Array("{}".utf8)), through: transport)
        #expect(seen == .answer(503))
        #expect(answer?.headers["x-fault"] == "kit")
        #expect(await Self.send(.json(signUp, Array("{}".utf8)), through: fake.transport()).0 == .answer(200))
        #expect(fake.requests.map(\.fault) == [.status(503, headers: ["X-Fault": "kit"]), nil])
        try await fake.shutdown()
    }

    /// Every way of not answering, on the fake OIDC provider's discovery document, seen by the
    /// client the same way in both modes.
    @Test(arguments: Mode.allCases, [
        (FakeFault.hang, Seen.timeout), (.trickle, .timeout), (.drop, .network), (.refuse, .network), (.dropMidResponse, .network),
        (.delay(0.1), .answer(200)), (.oauthError("invalid_grant"), .answer(400)), (.redirect(307, location: "http://127.0.0.1:9/"), .answer(307)),
    ])
    func aFaultOnTheOIDCDiscoveryDocument(_ mode: Mode, _ faultAndOutcome: (FakeFault, Seen)) async throws {
        let (fault, expected) = faultAndOutcome
        let fake = try await FakeOIDC.start()
        let discovery = fake.issuer + "/.well-known/openid-configuration"
        fake.faults.inject(fault, on: "/.well-known/openid-configuration")
        let (seen, _) = await Self.send(.get(discovery), through: mode == .loopback ? Self.loopback() : fake.transport(deadline: Self.deadline))
        #expect(seen == expected, "\(fault) over \(mode)")
        #expect(fake.requests.count == 1, "the faulted request is logged")
        await fake.shutdown()
    }

    /// Aimed over HTTP at a stand-in, whose control plane is the kit's: the Microsoft stand-in's
    /// token endpoint answers the fault, then as before.
    @Test func aStandInTakesFaultsOverItsControlPlane() async throws {
        let standIn = try await FederatedStandIn.start(.microsoft, clientID: "kit")
        let aim = #"{"fault":"status","status":429,"retry_after":3,"route":"/common/oauth2/v2.0/token"}"#
        #expect(await Self.send(.json(standIn.base + "/_fake/faults", Array(aim.utf8)), through: Self.loopback()).0 == .answer(200))
        let (seen, answer) = await Self.send(.form(standIn.tokenEndpoint, [("grant_type", "authorization_code")]), through: Self.loopback())
        #expect(seen == .answer(429))
        #expect(answer?.headers["retry-after"] == "3")
        #expect(await Self.send(.form(standIn.tokenEndpoint, [("grant_type", "authorization_code")]), through: Self.loopback()).0 == .answer(400))
        #expect(await Self.send(.json(standIn.base + "/_fake/faults", Array(#"{"fault":"meteor"}"#.utf8)), through: Self.loopback()).0 == .answer(400))
        await standIn.shutdown()
    }

    /// The scripted answerer takes over every route of the fake Firebase (a hostile provider),
    /// and the control plane stays its own.
    @Test(arguments: Mode.allCases)
    func theAnswererTakesOverEveryRoute(_ mode: Mode) async throws {
        let fake = try await FakeFirebase.start(serving: mode)
        fake.faults.answer { Reply(status: 418, body: "{\"path\":\"\($0.path)\"}") }
        for path in ["/securetoken.googleapis.com/v1/token", "/identitytoolkit.googleapis.com/v1/accounts:lookup"] {
            let (seen, answer) = await Self.send(.json("http://\(fake.emulatorHost)\(path)?key=k", []), through: fake.transport())
            #expect(seen == .answer(418))
            #expect(answer.map { String(decoding: $0.body, as: UTF8.self) } == "{\"path\":\"\(path)\"}")
        }
        #expect(fake.requests.map(\.status) == [418, 418])
        try await fake.shutdown()
    }
}
