import Foundation
import Synchronization
import Testing
import TokendFakes
import TokendProtocol
import TokendTestSupport

/// Every provider answer is input (docs/security.md, "Provider answers"). The real tokend, with a
/// Firebase account on the fake Firebase and an OpenID Connect account on the fake OIDC provider,
/// both turned hostile by their fault layer's scripted answerer on every route, is driven
/// through every operation that makes it parse a provider's answer — refresh, import, each
/// sign-in method, device authorization and polling, discovery, JWKS, scoped grants, every
/// Identity Toolkit call, revocation — while the stand-in answers each request with seeded random
/// and extreme JSON: huge, negative, NaN and infinite numbers, wrong types, deep nesting, 1 MiB
/// strings, empty and non-JSON bodies, absurd `Retry-After`. The property: tokend never dies, and
/// every command gets an answer with an exit code from README.md, "Exit codes".
///
/// Seeded: `TOKEND_PROPERTY_SEED=N` replays one seed; a failure names its seed and operation.
/// (The browser login is left out: its code redemption is parsed by the same code as the device
/// grant's token answer, which runs here.)
@Suite(.serialized) struct ProviderAnswerPropertyTests {
    /// Three seeds of 40 operations each: a few seconds on two loaded cores, enough for every
    /// parser to meet many shapes; longer runs use the variable. Seed 37 is kept because it
    /// found a real crash: a device grant's `expires_in` of 1e19 trapped tokend (issue 17.2;
    /// seeds 1–36 missed it).
    static let seeds: [UInt64] = ProcessInfo.processInfo.environment["TOKEND_PROPERTY_SEED"].flatMap { UInt64($0) }.map { [$0] } ?? [1, 2, 37]
    static let operationsPerSeed = 40
    /// Exit codes a command may end with when the provider talks nonsense. 69 (daemon not
    /// reachable) is what a dead daemon gives, so it is not among them.
    static let allowedExits: Set<Int32> = [0, 1, 64, 75, 77, 78]

    @Test(arguments: seeds)
    func theDaemonSurvivesAndAnswersWhateverTheProviderSays(_ seed: UInt64) async throws {
        try await withWorld(accounts: [], startDaemon: false) { world in
            let hostile = try await FakeOIDC.start()
            try await withTearDown(hostile, tearDown: { await $0.shutdown() }) { hostile in
                let firebase = world.fake
                let generator = HostileAnswers(seed: seed)
                let base = hostile.issuer
                hostile.faults.answer { generator.answer(to: $0, base: base) }
                firebase.faults.answer { generator.answer(to: $0, base: base) }
                try world.writeConfig("""
                    [account.fb]
                    provider = "firebase"
                    api_key = "property-key"
                    emulator = "\(firebase.emulatorHost)"

                    [account.oi]
                    provider = "oidc"
                    issuer = "\(hostile.issuer)"
                    client_id = "property-client"
                    scopes = ["openid", "offline_access"]
                    """)
                try await world.startDaemon()
                var picker = SplitMix(seed: seed ^ 0x9E37_79B9_7F4A_7C15)
                for step in 0..<Self.operationsPerSeed {
                    let operation = Self.operations[Int(picker.next() % UInt64(Self.operations.count))]  // conversion: a remainder below a small count
                    let run = try await world.tokenctl(operation.arguments + ["--timeout", "8"], stdin: operation.stdin)
                    let context = "seed \(seed), step \(step), tokenctl \(operation.arguments.joined(separator: " ")): exit \(run.status), \(run.stderr)"
                    #expect(Self.allowedExits.contains(run.status), "\(context)")
                    if run.status != 0 { #expect(!run.stderr.isEmpty, "a failure says why: \(context)") }
                    let hello = try await world.call(.hello, timeout: 10)
                    #expect(hello.ok, "tokend stopped answering after \(context)")
                    #expect(!world.daemonLog.contains("Fatal error"), "tokend crashed after \(context)")
                    if !hello.ok || world.daemonLog.contains("Fatal error") { return }
                }
                // The property means something only if the parsers were reached, on both fakes.
                let paths = Set(hostile.requests.map(\.path) + firebase.requests.map(\.path))
                let count = hostile.requests.count + firebase.requests.count
                #expect(count >= Self.operationsPerSeed / 4, "seed \(seed): only \(count) provider requests: \(paths)")
                #expect(!hostile.requests.isEmpty && !firebase.requests.isEmpty, "seed \(seed): one fake was never asked: \(paths)")
                print("seed \(seed): \(count) hostile answers to \(paths.sorted())")
            }
        }
    }

    struct Operation: Sendable {
        var arguments: [String]
        var stdin: String? = nil
    }

    static let operations: [Operation] = [
        Operation(arguments: ["import", "fb"], stdin: "property-refresh-token\n"),
        Operation(arguments: ["refresh", "fb"]),
        Operation(arguments: ["token", "fb"]),
        Operation(arguments: ["login", "fb", "--email", "user@example.com"], stdin: "property-password\n"),
        Operation(arguments: ["login", "fb", "--email", "user@example.com", "--create"], stdin: "property-password\n"),
        Operation(arguments: ["login", "fb", "--anonymous"]),
        Operation(arguments: ["login", "fb", "--custom-token"], stdin: "property-custom-token\n"),
        Operation(arguments: ["account", "show", "fb"]),
        Operation(arguments: ["account", "verify-email", "fb"]),
        Operation(arguments: ["account", "reset-password", "fb", "--email", "user@example.com"]),
        Operation(arguments: ["account", "upgrade", "fb", "--email", "user@example.com"], stdin: "property-password\n"),
        Operation(arguments: ["account", "delete", "fb", "--yes"]),
        Operation(arguments: ["logout", "fb"]),
        Operation(arguments: ["import", "oi"], stdin: "property-refresh-token\n"),
        Operation(arguments: ["refresh", "oi"]),
        Operation(arguments: ["token", "oi"]),
        Operation(arguments: ["token", "oi", "--scope", "openid"]),
        Operation(arguments: ["login", "oi", "--device"]),
        Operation(arguments: ["logout", "oi"]),
        Operation(arguments: ["status"]),
    ]
}

/// SplitMix64 (Steele, Lea, Flood 2014): small, fast, and the same sequence for the same seed.
struct SplitMix: Sendable {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }  // conversion: a remainder below an Int bound
    mutating func chance(_ percent: Int) -> Bool { below(100) < percent }
}

/// The hostile provider's answers: shaped like what each endpoint should say often enough to get
/// past the first checks, with values drawn from everything a parser can choke on.
final class HostileAnswers: Sendable {
    private let random: Mutex<SplitMix>

    init(seed: UInt64) { random = Mutex(SplitMix(seed: seed)) }

    func answer(to request: IncomingRequest, base: String) -> Reply? {
        random.withLock { random in Self.answer(to: request, base: base, random: &random) }
    }

    static let statuses = [200, 200, 200, 200, 400, 401, 403, 404, 428, 429, 500, 503]

    static func answer(to request: IncomingRequest, base: String, random: inout SplitMix) -> Reply {
        let status = statuses[random.below(statuses.count)]
        var headers: [String: String] = [:]
        if random.chance(30) { headers["Retry-After"] = ["1e19", "-5", "nan", "99999999999999999999", "1", "Wed, 21 Oct 2015 07:28:00 GMT", ""][random.below(7)] }
        if random.chance(20) { headers["Date"] = ["garbage", "Thu, 01 Jan 1970 00:00:00 GMT", "Fri, 31 Dec 9999 23:59:59 GMT"][random.below(3)] }
        // A well-formed discovery document most of the time, so the deeper endpoints are reached.
        if request.path.hasSuffix("openid-configuration"), random.chance(80) {
            var document: [String: Any] = [
                "issuer": base, "token_endpoint": base + "/token", "device_authorization_endpoint": base + "/device",
                "authorization_endpoint": base + "/authorize", "revocation_endpoint": base + "/revoke", "jwks_uri": base + "/jwks",
            ]
            if random.chance(20) { document[["token_endpoint", "jwks_uri", "issuer", "device_authorization_endpoint"][random.below(4)]] = extreme(&random, depth: 0) }
            return Reply(status: 200, body: json(document), headers: headers)
        }
        switch random.below(10) {
        case 0: return Reply(status: status, body: "", headers: headers)
        case 1: return Reply(status: status, body: "<html>not json</html>", headers: headers)
        case 2: return Reply(status: status, body: json(extreme(&random, depth: 0)), headers: headers)
        default:
            var object: [String: Any] = [:]
            for field in fields(for: request.path) where random.chance(70) {
                object[field] = random.chance(50) ? plausible(field, base: base, random: &random) : extreme(&random, depth: 0)
            }
            return Reply(status: status, body: json(object), headers: headers)
        }
    }

    /// The fields each endpoint's parser reads.
    static func fields(for path: String) -> [String] {
        if path.hasSuffix("/jwks") { return ["keys"] }
        if path.hasSuffix("/device") { return ["device_code", "user_code", "verification_uri", "verification_url", "verification_uri_complete", "expires_in", "interval", "error"] }
        if path.hasSuffix("/revoke") { return ["error", "error_description"] }
        if path.contains("identitytoolkit") {
            return [
                "idToken", "refreshToken", "expiresIn", "localId", "email", "users", "needConfirmation", "mfaPendingCredential", "mfaInfo",
                "errorMessage", "error", "emailVerified", "providerId", "oauthIdToken", "kind",
            ]
        }
        return ["id_token", "access_token", "refresh_token", "expires_in", "token_type", "scope", "error", "error_description", "user_id", "project_id"]
    }

    static func plausible(_ field: String, base: String, random: inout SplitMix) -> Any {
        switch field {
        case "id_token", "idToken", "access_token", "oauthIdToken": return jwt(&random)
        case "expires_in", "expiresIn", "interval": return ([3600, "3600", 1, 0, 5] as [Any])[random.below(5)]
        case "keys": return [["kty": "RSA", "kid": "k", "n": "AQAB", "e": "AQAB"], ["kty": "EC"], "garbage", ["kid": 5]] as [Any]
        case "users": return [["localId": "u", "email": "a@b.c", "providerUserInfo": [["providerId": 5]], "createdAt": "1e30"] as [String: Any]] as [Any]
        case "error": return (["invalid_grant", "slow_down", "authorization_pending", "access_denied", "expired_token", ["message": "TOKEN_EXPIRED"]] as [Any])[random.below(6)]
        case "errorMessage": return ["FEDERATED_USER_ID_ALREADY_LINKED", "EMAIL_EXISTS", "INVALID_IDP_RESPONSE"][random.below(3)]
        case "verification_uri", "verification_url", "verification_uri_complete": return base + "/activate"
        case "needConfirmation", "emailVerified": return true
        case "mfaInfo": return [["mfaEnrollmentId": "e1", "totpInfo": [:] as [String: Any]], ["mfaEnrollmentId": 5, "phoneInfo": ["x"]], "garbage"] as [Any]
        default: return "property-\(field)"
        }
    }

    /// A JWT whose claims are extreme: the daemon reads `exp`, `iat` and identity claims from it.
    static func jwt(_ random: inout SplitMix) -> String {
        let header = ["alg": "RS256", "kid": "k", "typ": "JWT"]
        let claims: [String: Any] = [
            "exp": extreme(&random, depth: 2), "iat": extreme(&random, depth: 2), "sub": extreme(&random, depth: 2),
            "aud": "property-client", "iss": "x", "email": extreme(&random, depth: 2), "user_id": "u",
        ]
        func part(_ object: Any) -> String {
            Data(json(object).utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
        }
        return part(header) + "." + part(claims) + ".c2ln"
    }

    /// A value a parser should refuse without crashing.
    static func extreme(_ random: inout SplitMix, depth: Int) -> Any {
        switch random.below(depth > 1 ? 12 : 14) {
        case 0: return 1e308
        case 1: return -1e308
        case 2: return 1e19
        case 3: return -1
        case 4: return "nan"
        case 5: return "inf"
        case 6: return "-9223372036854775809"
        case 7: return 9_223_372_036_854_775_807
        case 8: return NSNull()
        case 9: return false
        case 10: return String(repeating: "A", count: random.chance(20) ? 1 << 20 : 300)
        case 11: return [:] as [String: Any]
        case 12: return [extreme(&random, depth: depth + 1), extreme(&random, depth: depth + 1)]
        default: return deepNesting(random.chance(50) ? 100 : 10_000)
        }
    }

    /// `levels` arrays inside each other: JSON parsers that recurse without a limit overflow
    /// their stack here. Returned as raw text marker, spliced into the body by `json`.
    static func deepNesting(_ levels: Int) -> Any { RawJSON(text: String(repeating: "[", count: levels) + String(repeating: "]", count: levels)) }

    struct RawJSON { var text: String }

    /// JSONSerialization for everything but `RawJSON`, which is spliced in verbatim.
    static func json(_ value: Any) -> String {
        switch value {
        case let raw as RawJSON: return raw.text
        case let object as [String: Any]:
            return "{" + object.sorted { $0.key < $1.key }.map { json($0.key) + ":" + json($0.value) }.joined(separator: ",") + "}"
        case let array as [Any]: return "[" + array.map { json($0) }.joined(separator: ",") + "]"
        case let string as String:
            let data = (try? JSONSerialization.data(withJSONObject: [string], options: [.fragmentsAllowed])) ?? Data("[\"\"]".utf8)
            return String(String(decoding: data, as: UTF8.self).dropFirst().dropLast())
        case let flag as Bool: return flag ? "true" : "false"
        case let number as Int: return String(number)
        case let number as Double: return "\(number)"
        case is NSNull: return "null"
        default: return "null"
        }
    }
}
