import Foundation
import Testing
import TokendCore
import TokendTestSupport

/// `docker-credential-tokend` (issue 21, item 3) run by the real client, skopeo from Debian, with
/// README's `registry_hosts` and `credHelpers` as written (but for the registry's address),
/// against a loopback OCI registry stand-in (`Tests/Clients/registry_standin.py`) whose token
/// service accepts only `oauth2accesstoken` with the account's live token.
@Suite struct ContainerRegistryTests {
    static var helper: String { DaemonHarness.binDirectory + "/docker-credential-tokend" }

    /// A world with the registry stand-in running and account `work` claiming it as README says.
    struct Registry {
        let world: DaemonHarness
        let pid: pid_t
        let address: String
        let log: String

        static func start() async throws -> Registry {
            let world = try await DaemonHarness.start(startDaemon: false)
            do {
                let output = world.keyring.root.appendingPathComponent("registry.out").path
                let log = world.keyring.root.appendingPathComponent("registry.log").path
                let pid = try ChildProcess.start(
                    Repository.clientsPython,
                    [Repository.path("Tests/Clients/registry_standin.py"), DaemonHarness.binDirectory + "/tokenctl", "work", log],
                    environment: world.environment, output: output)
                var address = ""
                do {
                    try await poll("the registry stand-in listens") {
                        let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
                        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("listening ") }) else { return false }
                        address = String(line.dropFirst("listening ".count))
                        return true
                    }
                    let section = try Repository.readmeSection("### Container registries")
                    let claim = try #require(section.split(separator: "\n").first { $0.hasPrefix("registry_hosts = ") })
                    try world.writeConfig(world.firebaseAccount("work") + "\n" + claim.replacingOccurrences(of: "registry.example.com", with: address) + "\n")
                    try await world.startDaemon()
                } catch {
                    ChildProcess.stop(pid)
                    throw error
                }
                return Registry(world: world, pid: pid, address: address, log: log)
            } catch {
                await world.shutdown()
                throw error
            }
        }

        func shutdown() async {
            ChildProcess.stop(pid)
            await world.shutdown()
        }

        /// README's auth.json, as written but for the registry's name (`host`).
        func authFile(naming host: String) throws -> String {
            let section = try Repository.readmeSection("### Container registries")
            let start = try #require(section.range(of: "```json\n"))
            let end = try #require(section.range(of: "```", range: start.upperBound..<section.endIndex))
            let path = world.keyring.root.appendingPathComponent("auth-\(host.hashValue).json").path
            try section[start.upperBound..<end.lowerBound].replacingOccurrences(of: "registry.example.com", with: host)
                .write(toFile: path, atomically: true, encoding: .utf8)
            return path
        }

        /// `skopeo list-tags` of the stand-in's repository, named `host`, with the helper on PATH.
        func skopeo(host: String) async throws -> DaemonHarness.Run {
            var environment = world.environment
            environment["PATH"] = DaemonHarness.binDirectory + ":" + (environment["PATH"] ?? "/usr/bin:/bin")
            // --tls-verify=false: the stand-in speaks plain HTTP on loopback, as a test registry does.
            let arguments = ["list-tags", "--authfile", try authFile(naming: host), "--tls-verify=false", "docker://\(host)/tokend/demo"]
            let childEnvironment = environment
            let run = try await offPool { try ChildProcess.run("/usr/bin/skopeo", arguments, environment: childEnvironment, timeout: 120) }
            return DaemonHarness.Run(status: run.status, stdout: run.stdout, stderr: run.stderr)
        }

        /// Every credential the stand-in's token service received.
        var received: [[String: String]] {
            let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            return text.split(separator: "\n").compactMap { try? JSONDecoder().decode([String: String].self, from: Data($0.utf8)) }
        }

        func helper(_ arguments: [String], stdin: String? = nil) async throws -> DaemonHarness.Run {
            let environment = world.environment
            let run = try await offPool { try ChildProcess.run(ContainerRegistryTests.helper, arguments, environment: environment, stdin: stdin) }
            return DaemonHarness.Run(status: run.status, stdout: run.stdout, stderr: run.stderr)
        }
    }

    @Test func skopeoListsTagsWithTheAccountsLiveToken() async throws {
        let registry = try await Registry.start()
        try await withTearDown(registry, tearDown: { await $0.shutdown() }) { registry in
            try await registry.world.importNewUser()
            let live = try await registry.world.tokenctl(["token", "work"]).stdout.trimmed
            let run = try await registry.skopeo(host: registry.address)
            #expect(run.status == 0, "skopeo: \(run.stderr)")
            #expect(run.stdout.contains("\"latest\""), "\(run.stdout)")
            #expect(registry.received.last == ["username": "oauth2accesstoken", "secret": live])
        }
    }

    /// A registry no account claims: the helper's "not found", so skopeo goes on without
    /// credentials and the registry refuses it; the token went nowhere.
    @Test func anUnclaimedRegistryGetsNoToken() async throws {
        let registry = try await Registry.start()
        try await withTearDown(registry, tearDown: { await $0.shutdown() }) { registry in
            try await registry.world.importNewUser()
            let other = "localhost:" + (registry.address.split(separator: ":").last.map(String.init) ?? "")
            let answer = try await registry.helper(["get"], stdin: other)
            #expect(answer.status != 0)
            #expect(answer.stdout == "credentials not found in native keychain\n")
            let run = try await registry.skopeo(host: other)
            #expect(run.status != 0)
            #expect(registry.received.allSatisfy { ($0["secret"] ?? "").isEmpty }, "no token was sent: \(registry.received)")
        }
    }

    /// Without a session skopeo fails with tokenctl's next step in its error, and no request
    /// carries a token.
    @Test func withoutASessionSkopeoSaysWhatToRun() async throws {
        let registry = try await Registry.start()
        try await withTearDown(registry, tearDown: { await $0.shutdown() }) { registry in
            let run = try await registry.skopeo(host: registry.address)
            #expect(run.status != 0)
            #expect(run.stderr.contains("tokenctl login work"), "\(run.stderr)")
            #expect(registry.received.isEmpty)
        }
    }

    /// The protocol by hand: `get` for each way a tool names a registry, `list`, `store` and
    /// `erase` accepted and ignored, anything else a usage error on stderr.
    @Test func theHelperProtocol() async throws {
        let registry = try await Registry.start()
        try await withTearDown(registry, tearDown: { await $0.shutdown() }) { registry in
            try await registry.world.importNewUser()
            let live = try await registry.world.tokenctl(["token", "work"]).stdout.trimmed
            for name in [registry.address, "https://\(registry.address)", "http://\(registry.address)/v2/", registry.address.uppercased() + "\n"] {
                let answer = try await registry.helper(["get"], stdin: name)
                #expect(answer.status == 0, "\(name): \(answer.stdout)")
                let json = try JSONDecoder().decode([String: String].self, from: Data(answer.stdout.utf8))
                #expect(json == ["ServerURL": name.trimmed, "Username": "oauth2accesstoken", "Secret": live])
            }
            let list = try await registry.helper(["list"])
            #expect(list.status == 0 && list.stdout == "{\"\(registry.address)\":\"oauth2accesstoken\"}\n", "\(list.stdout)")
            for operation in ["store", "erase"] {
                let stored = try await registry.helper([operation], stdin: #"{"ServerURL":"x","Username":"u","Secret":"s"}"#)
                #expect(stored.status == 0 && stored.stdout.isEmpty && stored.stderr.isEmpty)
            }
            let wrong = try await registry.helper(["delete"])
            #expect(wrong.status == 64 && wrong.stderr.split(separator: "\n").count == 1 && wrong.stdout.isEmpty)
        }
    }
}
