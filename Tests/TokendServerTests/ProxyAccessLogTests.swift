import Foundation
import Logging
import Testing
import TokendCore
import TokendProtocol
import TokendProxy
@testable import TokendServer
import TokendTestClock
import TokendTestSupport

/// The proxies' side of the audit: what a proxied request's record holds, and a consumer's
/// `unit` checked at accept from the peer's cgroup.
@Suite struct ProxyAccessLogTests {
    func withLog(_ body: (ProxyAccessLog, String) throws -> Void) throws {
        let directory = try TemporaryDirectory()
        defer { try? directory.remove() }
        let log = AuditLog(directory: directory.path, journal: false, clock: ManualClock(), logger: Logger(label: "proxy-audit-test"))
        defer { log.stop() }
        try body(ProxyAccessLog(audit: log), directory.appending("audit.jsonl"))
    }

    func configuration(unit: String?) -> Configuration {
        var configuration = Configuration()
        var agent = ConsumerPolicy(name: "agent", accounts: ["work"])
        agent.unit = unit
        configuration.consumers["agent"] = agent
        return configuration
    }

    @Test func aProxiedRequestIsRecordedWithItsPeerOriginAndOutcome() throws {
        try withLog { access, path in
            let (me, refusal) = access.admit(ProxyPeer(pid: getpid(), uid: getuid()), consumer: "agent")
            #expect(refusal == nil)
            #expect(me.executable != nil && me.cgroup != nil)
            access.record(ProxyAuditRecord(consumer: "agent", account: "work", upstream: "https://api.example.com", method: "GET", outcome: .forwarded(status: 401), peer: me, kind: .access))
            var refused = ProxyAuditRecord(consumer: "agent", account: "work", upstream: "https://api.example.com", method: "GET", outcome: .refused(.noToken), peer: me)
            (refused.reason, refused.tokenFailure) = ("no token for account work (needs_login): …", .needsLogin)
            access.record(refused)
            access.record(ProxyAuditRecord(consumer: "agent", account: nil, upstream: "http://evil.example.com", method: "GET", outcome: .refused(.hostNotAllowed), peer: me))
            access.audit.flush()
            let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map { try JSONDecoder().decode(AuditRecord.self, from: Data($0.utf8)) }
            #expect(lines.map(\.op) == ["proxy", "proxy", "proxy"])
            #expect(lines.map(\.outcome) == ["ok", "needs_login", "forbidden"])
            #expect(lines.map(\.upstream) == ["https://api.example.com", "https://api.example.com", "http://evil.example.com"])
            #expect(lines[0].consumer == "agent" && lines[0].account == "work" && lines[0].kind == "access" && lines[0].pid == getpid())
            #expect(lines[0].executable == me.executable)
            #expect(lines[1].reason == "no token for account work (needs_login): …")
        }
    }

    @Test func everyRefusalHasTheProtocolsCode() {
        #expect(ProxyAccessLog.code(of: .hostNotAllowed, tokenFailure: nil) == .forbidden)
        #expect(ProxyAccessLog.code(of: .connect, tokenFailure: nil) == .forbidden)
        #expect(ProxyAccessLog.code(of: .otherUser, tokenFailure: nil) == .forbidden)
        #expect(ProxyAccessLog.code(of: .upstreamRefused, tokenFailure: nil) == .forbidden)
        #expect(ProxyAccessLog.code(of: .noToken, tokenFailure: .keyringLocked) == .keyringLocked)
        #expect(ProxyAccessLog.code(of: .upstreamFailed, tokenFailure: nil) == .unavailable)
        #expect(ProxyAccessLog.code(of: .tooLarge, tokenFailure: nil) == .tooLarge)
        #expect(ProxyAccessLog.code(of: .notProxyRequest, tokenFailure: nil) == .badRequest)
    }

    @Test func aConsumerLimitedToAUnitTakesOnlyPeersInIt() throws {
        try withLog { access, _ in
            access.apply(configuration(unit: "app-build.scope"))
            // This test process runs in no such unit; a TCP peer has no pid to look up.
            let (_, outside) = access.admit(ProxyPeer(pid: getpid(), uid: getuid()), consumer: "agent")
            #expect(outside?.contains("is limited to app-build.scope, and pid \(getpid()) runs in") == true)
            #expect(outside?.contains("systemd-run --user --scope --unit=app-build.scope") == true)
            let (_, tcp) = access.admit(ProxyPeer(uid: getuid()), consumer: "agent")
            #expect(tcp?.contains("only on a socket proxy") == true)
            // The unit this process does run in is accepted. In the root cgroup (`0::/`: a
            // container without systemd, as a fresh CI machine may run the suite) it runs in none.
            if let mine = PeerIdentity(pid: getpid(), uid: getuid(), gid: 0).resolved().unit {
                access.apply(configuration(unit: mine))
                #expect(access.admit(ProxyPeer(pid: getpid(), uid: getuid()), consumer: "agent").refusal == nil)
            }
            access.apply(configuration(unit: nil))
            #expect(access.admit(ProxyPeer(uid: getuid()), consumer: "agent").refusal == nil)
        }
    }
}
