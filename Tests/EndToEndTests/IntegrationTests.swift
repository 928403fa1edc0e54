import Foundation
import Testing
import TokendCore
import TokendProtocol
import TokendTestSupport

/// Issue 11's acceptance: the ways other tools get tokens (git, curl, kubectl, exec, hooks,
/// notifications, other languages, completions), each with the real tokend and tokenctl.
@Suite struct IntegrationTests {
    static var tokenctlPath: String { DaemonHarness.binDirectory + "/tokenctl" }

    /// How much earlier than the JWT's `exp` the expiry tokend reports may be, in seconds: it
    /// counts the lifetime from when the refresh was sent, less a second of rounding, so it is
    /// early by the refresh's duration, at most the HTTP deadline (10 s). Never later (a second
    /// of slack for whole-second formatting).
    static let expiryShortfall: ClosedRange<Double> = -1...12

    /// A private HOME without git configuration: only what a test sets up is there.
    static func gitEnvironment(_ world: DaemonHarness, home: URL) -> [String: String] {
        var environment = world.environment
        environment["HOME"] = home.path
        environment["GIT_CONFIG_NOSYSTEM"] = "1"
        environment["GIT_TERMINAL_PROMPT"] = "0"
        environment["GIT_ASKPASS"] = nil
        environment["SSH_ASKPASS"] = nil
        return environment
    }

    @Test func gitClonesOverHTTPWithOnlyTheCredentialHelper() async throws {
        try await withWorld(startDaemon: false) { world in
            let server = try await BearerServer(expectedToken: "not-yet")
            defer { server.stop() }
            let host = "127.0.0.1:\(server.port)"
            try world.writeConfig(world.firebaseAccount("work") + "\ngit_hosts = [\"http://\(host)/team\"]\n" + world.firebaseAccount("other")
                + "\ngit_hosts = [\"git.example.com\"]\n")
            try await world.startDaemon()
            try await world.importNewUser()
            let token = try await world.tokenctl(["token", "work"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            try Data(token.utf8).write(to: server.directory.appendingPathComponent("token"))
            let home = server.directory.appendingPathComponent("home")
            try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
            let environment = Self.gitEnvironment(world, home: home)
            try await server.makeRepository("team/app", environment: environment)
            let url = "http://\(host)/team/app.git"

            // Without the helper git has nothing to offer, and the server refuses it.
            let refused = try await runChild("/usr/bin/git", ["clone", "-q", url, home.appendingPathComponent("refused").path], environment: environment)
            #expect(refused.status != 0)
            #expect(server.requests.contains("git denied"))

            // The README's line, plus useHttpPath because the claim names a path.
            for setting in [["credential.http://\(host).helper", "!\(Self.tokenctlPath) git-credential"], ["credential.useHttpPath", "true"]] {
                let configured = try await runChild("/usr/bin/git", ["config", "--global"] + setting, environment: environment)
                #expect(configured.status == 0, "\(configured.stderr)")
            }
            let clone = try await runChild("/usr/bin/git", ["clone", "-q", url, home.appendingPathComponent("clone").path], environment: environment)
            #expect(clone.status == 0, "\(clone.stderr)")
            let log = try await runChild("/usr/bin/git", ["-C", home.appendingPathComponent("clone").path, "log", "--format=%s"], environment: environment)
            #expect(log.stdout == "first\n")
            // The fake's users have no email claim: the user name falls back to oauth2.
            #expect(server.requests.contains("git ok user=oauth2"), "\(server.requests)")
            #expect(!clone.stderr.contains(token) && !world.daemonLog.contains(token))
        }
    }

    @Test func gitCredentialAnswersOnlyForClaimedHostsAndPaths() async throws {
        try await withWorld(startDaemon: false) { world in
            try world.writeConfig(world.firebaseAccount("work") + "\ngit_hosts = [\"git.example.com\"]\ngit_username = \"builder\"\n"
                + world.firebaseAccount("org") + "\ngit_hosts = [\"git.example.com/my-org\"]\n")
            try await world.startDaemon()
            try await world.importNewUser(into: "work")
            try await world.importNewUser(into: "org")
            let work = try await world.tokenctl(["git-credential", "get"], stdin: "protocol=https\nhost=git.example.com\npath=someone/else.git\n\n")
            #expect(work.status == 0, "\(work.stderr)")
            let fields = Dictionary(uniqueKeysWithValues: work.stdout.split(separator: "\n").map {
                let parts = $0.split(separator: "=", maxSplits: 1)
                return (String(parts[0]), String(parts.count > 1 ? parts[1] : ""))
            })
            #expect(Set(fields.keys) == ["username", "password", "password_expiry_utc"])
            #expect(fields["username"] == "builder")
            let claims = try #require(JWTClaims(token: fields["password"] ?? ""))
            let expiry = try #require(Int(fields["password_expiry_utc"] ?? ""))
            // tokend counts a lifetime from when it sent the refresh: never later than the JWT's
            // `exp`, earlier by the refresh's own duration (a second or more on loaded cores).
            let shorter = Int(try #require(claims.expiresAt).timeIntervalSince1970) - expiry
            #expect(Self.expiryShortfall.contains(Double(shorter)), "\(shorter) s")
            // The longer path prefix wins, case-insensitively; it has no git_username: oauth2.
            let org = try await world.tokenctl(["git-credential", "get"], stdin: "protocol=https\nhost=GIT.example.com\npath=My-Org/app.git\n")
            #expect(org.stdout.hasPrefix("username=oauth2\npassword="), "\(org.stdout)")
            #expect(org.stdout != work.stdout)
            // Nobody claims it: nothing at all, so git asks its next helper. Plain http is not
            // answered for a claim that does not say http:// (a loopback host) itself.
            for request in ["protocol=https\nhost=elsewhere.example.com\n", "protocol=ssh\nhost=git.example.com\n", "",
                            "protocol=http\nhost=git.example.com\npath=someone/else.git\n"] {
                let none = try await world.tokenctl(["git-credential", "get"], stdin: request)
                #expect(none.status == 0 && none.stdout.isEmpty && none.stderr.isEmpty, "\(request): \(none)")
            }
            for operation in ["store", "erase"] {
                let harmless = try await world.tokenctl(["git-credential", operation], stdin: "protocol=https\nhost=git.example.com\nusername=x\npassword=y\n")
                #expect(harmless.status == 0 && harmless.stdout.isEmpty && harmless.stderr.isEmpty)
            }
            #expect(try await world.status("work").state == "active", "erase did not log the account out")
        }
    }

    @Test func curlWithTheHeaderReachesAServerThatChecksTheToken() async throws {
        try await withWorld { world in
            try await world.importNewUser()
            let token = try await world.tokenctl(["token", "work"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            let server = try await BearerServer(expectedToken: token)
            defer { server.stop() }
            let header = try await world.tokenctl(["header", "work", "--min-valid", "60"])
            #expect(header.status == 0)
            #expect(header.stdout == "Authorization: Bearer \(token)\n")
            var environment = world.environment
            environment["TOKENCTL"] = Self.tokenctlPath
            environment["URL"] = "http://127.0.0.1:\(server.port)/api"
            for command in [#"curl -fsS -H "$("$TOKENCTL" header work)" "$URL""#, #"curl -fsS -H @<("$TOKENCTL" header work) "$URL""#] {
                let run = try await runChild("/bin/bash", ["-c", command], environment: environment)
                #expect(run.status == 0, "\(command): \(run.stderr)")
                #expect(run.stdout == "hello, token holder\n")
            }
            let without = try await runChild("/bin/bash", ["-c", #"curl -fsS "$URL""#], environment: environment)
            #expect(without.status != 0, "the server does check")
            #expect(server.requests == ["api ok", "api ok", "api denied"])
        }
    }

    @Test func execCredentialIsAValidExecCredentialInTheVersionKubectlAsksFor() async throws {
        try await withWorld { world in
            try await world.importNewUser()
            let group = "client.authentication.k8s.io"
            let cases: [(String?, String)] = [
                (nil, "\(group)/v1"),
                (#"{"apiVersion":"\#(group)/v1","kind":"ExecCredential","spec":{"interactive":false}}"#, "\(group)/v1"),
                (#"{"apiVersion":"\#(group)/v1beta1","kind":"ExecCredential","spec":{}}"#, "\(group)/v1beta1"),
            ]
            for (execInfo, expected) in cases {
                var environment = world.environment
                environment["KUBERNETES_EXEC_INFO"] = execInfo
                let run = try await runChild(Self.tokenctlPath, ["exec-credential", "work", "--min-valid", "120"], environment: environment)
                #expect(run.status == 0, "\(run.stderr)")
                let object = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
                #expect(Set(object.keys) == ["apiVersion", "kind", "status"])
                #expect(object["apiVersion"] as? String == expected)
                #expect(object["kind"] as? String == "ExecCredential")
                let status = try #require(object["status"] as? [String: Any])
                #expect(Set(status.keys) == ["token", "expirationTimestamp"])
                let token = try #require(status["token"] as? String)
                let stamp = try #require(status["expirationTimestamp"] as? String)
                // metav1.Time: RFC 3339 in UTC; this one must match the token's own expiry.
                #expect(stamp.hasSuffix("Z") && stamp.count == 20, "\(stamp)")
                let claims = try #require(JWTClaims(token: token))
                let shortfall = try #require(claims.expiresAt).timeIntervalSince(try #require(Timestamp.parse(stamp)))
                #expect(Self.expiryShortfall.contains(shortfall), "tokend counts from when it asked: \(shortfall) s")
                #expect(try #require(Timestamp.parse(stamp)).timeIntervalSinceNow >= 120 - 5)
            }
            for bad in [#"{"apiVersion":"\#(group)/v1alpha1"}"#, "not json"] {
                var environment = world.environment
                environment["KUBERNETES_EXEC_INFO"] = bad
                let run = try await runChild(Self.tokenctlPath, ["exec-credential", "work"], environment: environment)
                #expect(run.status == 64)
                #expect(run.stdout.isEmpty)
                #expect(run.stderr.split(separator: "\n").count == 1)
            }
        }
    }

    /// Runs `tokenctl exec work … -- CMD` from Python, which tells a signal (negative
    /// returncode) from an exit status, and the pid it started.
    static func runExec(_ world: DaemonHarness, _ arguments: [String]) async throws -> (pid: Int32, returncode: Int, stderr: String) {
        let launcher = "import subprocess, sys; p = subprocess.Popen(sys.argv[1:]); p.wait(); print(p.pid, p.returncode)"
        let run = try await runChild("/usr/bin/python3", ["-c", launcher, tokenctlPath, "exec", "work"] + arguments, environment: world.environment)
        let parts = run.stdout.split(separator: " ").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        guard parts.count == 2, let pid = Int32(parts[0]), let code = Int(parts[1]) else { throw HarnessError("launcher said \(run.stdout) \(run.stderr)") }
        return (pid, code, run.stderr)
    }

    @Test func execPassesExitStatusAndSignalsThroughAndLeavesNoWrapper() async throws {
        try await withWorld { world in
            try await world.importNewUser()
            for code in [0, 3, 130] {
                let run = try await Self.runExec(world, ["--", "/bin/sh", "-c", "exit \(code)"])
                #expect(run.returncode == code, "\(run.stderr)")
            }
            let killed = try await Self.runExec(world, ["--", "/bin/sh", "-c", "kill -TERM $$"])
            #expect(killed.returncode == -Int(SIGTERM), "killed by SIGTERM, not an exit status")

            // The child is the process the launcher started (tokenctl became it), and it sees the token.
            let directory = try TemporaryDirectory()
            defer { try? directory.remove() }
            let report = directory.url.appendingPathComponent("child").path
            let script = #"""
                { echo "pid=$$"; echo "account=$TOKEND_ACCOUNT"; echo "expires=$TOKEND_TOKEN_EXPIRES_AT"; echo "now=$(date +%s)"
                  echo "token=$TOKEND_TOKEN"; grep '^SigIgn' /proc/self/status; ls -l /proc/self/fd | grep -c socket: || true; } > "$0"
                """#
            let run = try await Self.runExec(world, ["--min-valid", "120", "--", "/bin/sh", "-c", script, report])
            #expect(run.returncode == 0, "\(run.stderr)")
            let lines = try String(contentsOfFile: report, encoding: .utf8).split(separator: "\n").map(String.init)
            let fields = Dictionary(lines.compactMap { line -> (String, String)? in
                guard let equals = line.firstIndex(of: "=") else { return nil }
                return (String(line[..<equals]), String(line[line.index(after: equals)...]))
            }, uniquingKeysWith: { $1 })
            #expect(fields["pid"] == String(run.pid), "no tokenctl wrapper between the launcher and the command")
            #expect(fields["account"] == "work")
            let expiry = try #require(Timestamp.parse(fields["expires"] ?? ""))
            let now = try #require(Double(fields["now"] ?? ""))
            #expect(expiry.timeIntervalSince1970 - now >= 120 - 1, "the child's token lives at least --min-valid")
            let claimed = try #require(JWTClaims(token: fields["token"] ?? "")?.expiresAt)
            #expect(Self.expiryShortfall.contains(claimed.timeIntervalSince(expiry)), "TOKEND_TOKEN_EXPIRES_AT is the token's expiry")
            // SIGPIPE (bit 12) not ignored, and no tokend socket inherited.
            let ignored = lines.first { $0.hasPrefix("SigIgn:") }.flatMap { UInt64($0.dropFirst("SigIgn:".count).trimmingCharacters(in: .whitespaces), radix: 16) }
            #expect(try #require(ignored) & (1 << 12) == 0, "\(lines)")
            #expect(lines.last == "0", "\(lines)")

            let missing = try await world.tokenctl(["exec", "work", "--", "/nonexistent/program"])
            #expect(missing.status == 64)
            #expect(missing.stderr.split(separator: "\n").count == 1)
            let noCommand = try await world.tokenctl(["exec", "work"])
            #expect(noCommand.status == 64)
        }
    }

    @Test func execOfANeedsLoginAccountRunsNothingAndExits77() async throws {
        try await withWorld { world in
            let directory = try TemporaryDirectory()
            defer { try? directory.remove() }
            let marker = directory.url.appendingPathComponent("ran").path
            let run = try await world.tokenctl(["exec", "work", "--", "/usr/bin/touch", marker])
            #expect(run.status == 77, "\(run.stderr)")
            #expect(!FileManager.default.fileExists(atPath: marker))
        }
    }
}
