import Foundation
import Testing
import TokendCore
@testable import TokendFleet

/// What tokend writes to etcd opens only with the fleet's key, for the same account and endpoint,
/// and carries no token in clear (docs/security.md, "A fleet").
@Suite struct FleetSealerTests {
    let key = FleetSealer(keyBytes: Array(repeating: 7, count: 32))
    let tokens = TokenSet(refreshToken: "canary-refresh-4f1c", idToken: "canary-id-9a2e", idTokenExpiresAt: Date(timeIntervalSince1970: 2_000_000_000))

    @Test func roundTrip() throws {
        let sealed = try key.seal(tokens, account: "bot", endpoint: "https://securetoken.googleapis.com")
        let opened = try key.open(sealed, account: "bot", endpoint: "https://securetoken.googleapis.com")
        #expect(opened.refreshToken == tokens.refreshToken)
        #expect(opened.idToken == tokens.idToken)
        #expect(opened.idTokenExpiresAt == tokens.idTokenExpiresAt)
    }

    @Test func noTokenInClear() throws {
        let sealed = String(decoding: try key.seal(tokens, account: "bot", endpoint: "e"), as: UTF8.self)
        #expect(sealed.hasPrefix("tokend-fleet 1:"))
        #expect(!sealed.contains("canary"))
    }

    /// The machine's boot anchor means nothing on another member: it stays behind.
    @Test func theBootAnchorStaysBehind() throws {
        var anchored = tokens
        anchored.boot = BootAnchor(id: "boot-1", issuedAt: 12)
        let opened = try key.open(try key.seal(anchored, account: "bot", endpoint: "e"), account: "bot", endpoint: "e")
        #expect(opened.boot == nil)
    }

    @Test(arguments: [("other", "e"), ("bot", "https://elsewhere.example.com")])
    func anotherAccountOrEndpointDoesNotOpen(account: String, endpoint: String) throws {
        let sealed = try key.seal(tokens, account: "bot", endpoint: "e")
        let error = #expect(throws: FleetError.self) { try key.open(sealed, account: account, endpoint: endpoint) }
        #expect(error?.code == .wrongKey)
    }

    @Test func anotherKeyDoesNotOpenAndSaysWhatToDo() throws {
        let sealed = try key.seal(tokens, account: "bot", endpoint: "e")
        let error = #expect(throws: FleetError.self) { try FleetSealer(keyBytes: Array(repeating: 8, count: 32)).open(sealed, account: "bot", endpoint: "e") }
        #expect(error?.code == .wrongKey)
        #expect(error?.message.contains("sealing_key") == true)
        #expect(error?.message.contains("canary") == false)
    }

    @Test func theKeyFile() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("fleet-key-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("fleet.key").path
        try (Data(repeating: 7, count: 32).base64EncodedString() + "\n").write(toFile: path, atomically: false, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        let loaded = try FleetSealer.load(path, environment: [:])
        #expect(try loaded.open(try key.seal(tokens, account: "bot", endpoint: "e"), account: "bot", endpoint: "e").refreshToken == tokens.refreshToken)

        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: path)
        let open = #expect(throws: FleetError.self) { try FleetSealer.load(path, environment: [:]) }
        #expect(open?.message.contains("chmod 600") == true)

        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        try Data(repeating: 7, count: 16).base64EncodedString().write(toFile: path, atomically: false, encoding: .utf8)
        let short = #expect(throws: FleetError.self) { try FleetSealer.load(path, environment: [:]) }
        #expect(short?.message.contains("32 bytes") == true)
    }

    @Test func aSystemdCredential() throws {
        let error = #expect(throws: FleetError.self) { try FleetSealer.load("credential:fleet-key", environment: [:]) }
        #expect(error?.message.contains("LoadCredential") == true)
    }
}

@Suite struct EtcdWireTests {
    @Test func prefixEnd() {
        #expect(etcdPrefixEnd(Array("/tokend/".utf8)) == Array("/tokend0".utf8))
        #expect(etcdPrefixEnd([0x61, 0xFF]) == [0x62])
        #expect(etcdPrefixEnd([0xFF]) == [0])
    }

    /// The gateway writes int64 as strings; a number is taken too, and nothing traps.
    @Test func numbers() throws {
        let decoded = try JSONDecoder().decode([EtcdNumber].self, from: Data(#"["42", 7, "9223372036854775807"]"#.utf8))
        #expect(decoded.map(\.value) == [42, 7, Int64.max])
        #expect(throws: (any Error).self) { try JSONDecoder().decode([EtcdNumber].self, from: Data(#"["9223372036854775808"]"#.utf8)) }
        let text = String(decoding: try JSONEncoder().encode(EtcdNumber(5)), as: UTF8.self)
        #expect(text == #""5""#)
    }

    /// A transaction inside a transaction (the election taken with a given session's write) is
    /// sent as the gateway reads a `RequestOp`'s `request_txn`: the transaction itself, not a box.
    @Test func nestedTransaction() throws {
        let inner = EtcdTxnRequest(compare: [EtcdCompare(key: "aA==", target: "CREATE", create_revision: EtcdNumber(0))],
            success: [EtcdRequestOp(request_put: EtcdPut(key: "aA==", value: "bQ==", lease: EtcdNumber(7)))], failure: [])
        let outer = EtcdRequestOp(request_txn: EtcdNestedTxn(inner))
        let object = try JSONSerialization.jsonObject(with: try JSONEncoder().encode(outer)) as? [String: Any]
        let txn = object?["request_txn"] as? [String: Any]
        #expect(object?.keys.sorted() == ["request_txn"])
        #expect((txn?["compare"] as? [[String: Any]])?.first?["target"] as? String == "CREATE")
        #expect(((txn?["success"] as? [[String: Any]])?.first?["request_put"] as? [String: Any])?["lease"] as? String == "7")
    }

    /// etcd's errors: a member without quorum is unreachable, a permission refused.
    @Test func failures() {
        let noLeader = EtcdClient.failure(status: 503, body: Array(#"{"error":"etcdserver: no leader","code":14,"message":"etcdserver: no leader"}"#.utf8), endpoint: "e")
        #expect(noLeader.code == .unreachable)
        let denied = EtcdClient.failure(status: 403, body: Array(#"{"error":"etcdserver: permission denied","code":7}"#.utf8), endpoint: "e")
        #expect(denied.code == .refused)
        #expect(denied.message.contains("permission denied"))
    }
}
