import Foundation
import Testing
import TokendCore
import TokendProtocol
import TokendTestSupport

/// Issue 49, items 1 and 2, with the real tokend and tokenctl: a consumer socket serves only its
/// policy. Acceptance: a consumer never learns another account's name, token or status: every op
/// and every error path on an account outside its policy answers exactly what an unknown name
/// answers, and every refusal is `forbidden` (exit 78), recorded in the audit.
@Suite struct ConsumerSocketTests {
    /// `[consumer.agent]` on `work` (defaults, min_valid at most 5 m, id tokens), and
    /// `[consumer.narrow]` whose tokens must name an audience.
    static func consumers(_ world: DaemonHarness, agentAccounts: String = "[\"work\"]") -> String {
        """

        [consumer.agent]
        socket = "\(agentSocket(world))"
        accounts = \(agentAccounts)
        kinds = ["id"]
        max_min_valid = "5m"

        [consumer.narrow]
        socket = "\(world.keyring.root.appendingPathComponent("run/narrow.sock").path)"
        accounts = ["work"]
        audiences = ["https://api.example.com"]
        """
    }

    static func agentSocket(_ world: DaemonHarness) -> String {
        world.keyring.root.appendingPathComponent("run/consumers/agent.sock").path
    }

    static func tokenctl(_ world: DaemonHarness, socket: String, _ arguments: [String], stdin: String? = nil) async throws -> DaemonHarness.Run {
        let environment = world.environment.merging(["TOKEND_SOCKET": socket]) { $1 }
        let result = try await offPool { try ChildProcess.run(DaemonHarness.binDirectory + "/tokenctl", arguments, environment: environment, stdin: stdin) }
        return DaemonHarness.Run(status: result.status, stdout: result.stdout, stderr: result.stderr)
    }

    static func call(_ socket: String, _ command: Command) async throws -> Response {
        try await offPool {
            let client = try BlockingClient(path: socket)
            client.setReadTimeout(seconds: 30)
            return try client.call(command, id: .number(1))
        }
    }

    /// The reply bytes, with one name swapped for another.
    static func bytes(_ response: Response, naming name: String, as other: String) -> String {
        String(decoding: WireCoding.encodeLine(response), as: UTF8.self).replacingOccurrences(of: name, with: other)
    }

    @Test func aConsumerSeesOnlyItsPolicy() async throws {
        try await withWorld(accounts: ["work", "other"]) { world in
            let work = try await world.importNewUser(into: "work")
            let other = try await world.importNewUser(into: "other")
            try world.writeConfig([world.firebaseAccount("work"), world.firebaseAccount("other"), Self.consumers(world)].joined(separator: "\n"))
            let reload = try await world.tokenctl(["reload"])
            try #require(reload.status == 0, "\(reload.stderr)")
            let socket = Self.agentSocket(world)
            var info = stat()
            #expect(stat(socket, &info) == 0 && info.st_mode & 0o777 == 0o600, "created by tokend, 0600")

            // Its own account: the token the main socket serves.
            let mainToken = try await world.tokenctl(["token", "work"])
            let token = try await Self.tokenctl(world, socket: socket, ["token", "work"])
            #expect(token.status == 0 && token.stdout == mainToken.stdout, "\(token.stderr)")
            #expect(try await Self.tokenctl(world, socket: socket, ["token", "work", "--min-valid", "300"]).status == 0)

            // Every op on `other` answers what it answers on a name that exists nowhere.
            let commands: [(String) -> Command] = [
                { .token(TokenArgs(account: $0)) }, { .token(TokenArgs(account: $0, minValid: 9999, kind: .access, scope: "x", audience: "y")) },
                { .status(StatusArgs(account: $0)) }, { .list(StatusArgs(account: $0)) }, { .refresh(RefreshArgs(account: $0)) },
                { .logout(LogoutArgs(account: $0)) }, { .watch(WatchArgs(account: $0)) },
                { .import(ImportArgs(account: $0, refreshToken: "canary-refresh-token")) },
                { .account(AccountArgs(account: $0, action: .show(timeout: 5))) },
            ]
            for command in commands {
                let hidden = try await Self.call(socket, command("other"))
                let unknown = try await Self.call(socket, command("no-such"))
                #expect(Self.bytes(hidden, naming: "other", as: "no-such") == Self.bytes(unknown, naming: "other", as: "no-such"), "\(command("other"))")
                #expect(!hidden.ok)
                let text = String(decoding: WireCoding.encodeLine(hidden), as: UTF8.self)
                #expect(!text.contains(other.idToken) && !text.contains(other.refreshToken))
            }
            // And that answer is the main socket's for an unknown name, word for word.
            let hiddenToken = try await Self.call(socket, .token(TokenArgs(account: "other")))
            let unknownOnMain = try await world.call(.token(TokenArgs(account: "no-such")), id: .number(1))
            #expect(Self.bytes(hiddenToken, naming: "other", as: "no-such") == Self.bytes(unknownOnMain, naming: "other", as: "no-such"))
            let hiddenRun = try await Self.tokenctl(world, socket: socket, ["token", "other"])
            let unknownRun = try await world.tokenctl(["token", "no-such"])
            #expect(hiddenRun.status == 67 && unknownRun.status == 67)
            #expect(hiddenRun.stderr.replacingOccurrences(of: "other", with: "no-such") == unknownRun.stderr)
            #expect(hiddenRun.stdout.isEmpty)

            // status and list: its accounts only.
            let status = try await Self.call(socket, .status(StatusArgs()))
            #expect(status.accounts?.map(\.name) == ["work"])
            let list = try await Self.tokenctl(world, socket: socket, ["list"])
            #expect(list.status == 0 && list.stdout.hasPrefix("work\t") && !list.stdout.contains("other"), "\(list.stdout)")

            // Refused: an op, a kind, a min_valid above the ceiling, a missing or other audience.
            for arguments in [["refresh", "work"], ["logout", "work"], ["token", "work", "--kind", "access"], ["token", "work", "--min-valid", "301"]] {
                let refused = try await Self.tokenctl(world, socket: socket, arguments)
                #expect(refused.status == 78, "\(arguments): \(refused.stderr)")
                #expect(refused.stdout.isEmpty && refused.stderr.split(separator: "\n").count == 1, "\(arguments): \(refused.stderr)")
                #expect(refused.stderr.contains("consumer \"agent\" may"), "\(arguments): \(refused.stderr)")
            }
            let narrow = world.keyring.root.appendingPathComponent("run/narrow.sock").path
            for arguments in [["token", "work"], ["token", "work", "--audience", "https://other.example.com"]] {
                let refused = try await Self.tokenctl(world, socket: narrow, arguments)
                #expect(refused.status == 78 && refused.stderr.contains("https://api.example.com"), "\(arguments): \(refused.stderr)")
            }
            // The logout was refused: the session is still there.
            #expect(try await world.tokenctl(["token", "work"]).stdout == mainToken.stdout)
            #expect(try await world.call(.hello).capabilities?.contains("login") == true)
            #expect(try await Self.call(socket, .hello).capabilities == ["hello", "token", "list", "status"])

            // A reload's policy applies to a connection already open.
            let open = SharedClient(try BlockingClient(path: socket))
            #expect(try await open.call(.token(TokenArgs(account: "work"))).ok)
            try world.writeConfig([world.firebaseAccount("work"), world.firebaseAccount("other"), Self.consumers(world, agentAccounts: "[\"other\"]")].joined(separator: "\n"))
            #expect(try await world.tokenctl(["reload"]).status == 0)
            #expect(try await open.call(.token(TokenArgs(account: "work"))).error?.code == .unknownAccount)
            #expect(try await open.call(.token(TokenArgs(account: "other"))).ok)

            // The audit: each call with its peer; never a token. Written off the answering
            // thread, so waited for.
            var records: [AuditRecord] = []
            try await poll("the audit records the consumer's last call") {
                let audit = try await world.tokenctl(["audit", "--consumer", "agent", "--json"])
                records = try audit.stdout.split(separator: "\n").map { try JSONDecoder().decode(AuditRecord.self, from: Data($0.utf8)) }
                return records.contains { $0.op == "token" && $0.account == "other" && $0.outcome == "ok" }
            }
            let refused = records.filter { $0.outcome == "forbidden" }
            #expect(refused.contains { $0.op == "refresh" && $0.account == "work" })
            #expect(refused.contains { $0.op == "token" && $0.kind == "access" })
            #expect(records.contains { $0.op == "token" && $0.account == "work" && $0.outcome == "ok" && $0.executable?.hasSuffix("/tokenctl") == true && $0.pid != nil })
            #expect(records.contains { $0.op == "token" && $0.account == "other" && $0.outcome == "unknown_account" })
            #expect(records.allSatisfy { $0.consumer == "agent" })
            let human = try await world.tokenctl(["audit", "--account", "other"])
            #expect(human.status == 0 && human.stdout.contains(" agent token other ") && human.stdout.contains(" main import other "), "\(human.stdout)")
            let file = try String(contentsOfFile: world.keyring.root.appendingPathComponent("home/.local/state/tokend/audit.jsonl").path, encoding: .utf8)
            for secret in [work.idToken, work.refreshToken, other.idToken, other.refreshToken, "canary-refresh-token"] {
                #expect(!file.contains(secret), "a token in the audit")
            }

            // Dropped from the file: the socket goes; at stop, every consumer socket goes.
            try world.writeConfig([world.firebaseAccount("work"), world.firebaseAccount("other")].joined(separator: "\n"))
            #expect(try await world.tokenctl(["reload"]).status == 0)
            #expect(!FileManager.default.fileExists(atPath: socket))
            #expect(FileManager.default.fileExists(atPath: narrow) == false)
        }
    }

    @Test func consumerSocketsGoWhenTokendStops() async throws {
        try await withWorld { world in
            try world.writeConfig(world.firebaseAccount("work") + "\n" + Self.consumers(world))
            world.stopDaemon()
            try await world.startDaemon()
            let socket = Self.agentSocket(world)
            #expect(FileManager.default.fileExists(atPath: socket), "created at start")
            world.stopDaemon()
            #expect(!FileManager.default.fileExists(atPath: socket), "removed at stop")
        }
    }
}
