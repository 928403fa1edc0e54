import Foundation
import Testing
import TokendFakes
import TokendTestSupport

/// A browser sign-in as another local user would attack it (docs/security.md, "Browser
/// sign-in"): reading every process's command line for the authorization URL, forging the
/// redirect with the right `state`, flooding the loopback listener. Each attacker is a real
/// process running as `nobody`.
@Suite(.serialized) struct LoginListenerAttackTests {
    /// Before: tokenctl gave xdg-open the URL itself (state, nonce, challenge, port) in its argv,
    /// and the listener completed the login for whoever sent the right state first.
    @Test func anotherUserNeitherLearnsTheURLNorCompletesTheLogin() async throws {
        try await withFakeOIDCAccount { world, fake in
            fake.script([.json(200, ["access_token": "real-access", "refresh_token": "real-refresh", "expires_in": 600])])
            let bin = try Self.fakeOpener(in: world)
            // The spy watches every command line and environment it can read while the login
            // starts, until three seconds after xdg-open showed up. A loaded machine may take long
            // to get there (a full CI run once took over two minutes, past a deadline of one
            // Patience): the spy outlives both of the test's waits before xdg-open, so its own
            // deadline is only a broken test's.
            let spyOutput = world.keyring.root.appendingPathComponent("spy.out").path
            let spy = try ChildProcess.start(
                "/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c", Self.spy, String(Int(3 * Patience.seconds))],
                environment: ["PATH": "/usr/bin:/bin"], output: spyOutput)
            defer { ChildProcess.stop(spy) }
            var environment = world.environment
            environment["DISPLAY"] = ":99"
            environment["PATH"] = bin + ":/usr/bin:/bin"
            environment["FAKE_OPENER_RECORD"] = world.keyring.root.appendingPathComponent("opener").path
            let loginOutput = world.keyring.root.appendingPathComponent("login.out").path
            let login = try ChildProcess.start(IntegrationTests.tokenctlPath, ["login", "corp", "--timeout", "60"], environment: environment, output: loginOutput)
            defer { ChildProcess.stop(login) }
            var url = ""
            try await poll("tokenctl printed the URL") {
                url = ((try? String(contentsOfFile: loginOutput, encoding: .utf8)) ?? "").split(separator: "\n").first { $0.hasPrefix("http") }.map(String.init) ?? ""
                return !url.isEmpty
            }
            // The browser got a page, not the URL: its argv names a 0600 file that sends it on.
            let opened = environment["FAKE_OPENER_RECORD"]! + ".argv"
            try await poll("xdg-open ran") { FileManager.default.fileExists(atPath: opened) }
            let argv = try String(contentsOfFile: opened, encoding: .utf8)
            #expect(!argv.contains("state=") && argv.contains("sign-in-") && argv.hasSuffix(".html\n"), "\(argv)")
            #expect(try String(contentsOfFile: environment["FAKE_OPENER_RECORD"]! + ".page", encoding: .utf8).contains("code_challenge="))
            #expect(try String(contentsOfFile: environment["FAKE_OPENER_RECORD"]! + ".mode", encoding: .utf8).hasPrefix("600"))

            let components = try #require(URLComponents(string: url))
            let query = Dictionary(uniqueKeysWithValues: (components.queryItems ?? []).map { ($0.name, $0.value ?? "") })
            let redirect = try #require(URLComponents(string: query["redirect_uri"] ?? ""))
            let port = try #require(redirect.port)
            let state = try #require(query["state"])
            // Say the state leaked anyway: nobody's forged redirect and flood are closed unread.
            let attack = try await world.runAsNobody("/usr/bin/python3", ["-c", Self.attacker, String(port), state, "40"])
            #expect(attack.status == 0, "\(attack.stderr)")
            #expect(attack.stdout.contains("forged: closed unanswered"), "\(attack.stdout)")
            #expect(attack.stdout.contains("flood: 40 of 40 closed"), "\(attack.stdout)")

            // The user's own browser delivers the real redirect, and the login completes with it.
            let page = try Self.get(port: port, path: "/callback?code=real-code&state=\(state)")
            #expect(page.hasPrefix("HTTP/1.1 200"), "\(page)")
            var status: Int32?
            try await poll("tokenctl login finished") {
                status = ChildProcess.exitStatusIfEnded(login)
                return status != nil
            }
            #expect(status == 0, "\((try? String(contentsOfFile: loginOutput, encoding: .utf8)) ?? "")")
            let grants = fake.requests.filter { $0.path == "/token" && $0.form["grant_type"] == "authorization_code" }
            #expect(grants.map { $0.form["code"] } == ["real-code"], "only the user's own code was redeemed")
            // The page is gone with the sign-in.
            #expect(!FileManager.default.fileExists(atPath: argv.trimmingCharacters(in: .newlines)))

            // The spy saw xdg-open's command line (so it was looking) but never the URL.
            try await poll(timeout: Patience.seconds + 10, "the spy finished") { ((try? String(contentsOfFile: spyOutput, encoding: .utf8)) ?? "").contains("done") }
            let seen = try String(contentsOfFile: spyOutput, encoding: .utf8)
            #expect(seen.contains("saw opener: True"), "\(seen)")
            #expect(seen.contains("saw url: False"), "\(seen)")
        }
    }

    /// An xdg-open that records its argv, the page it was given and that page's mode, and stays
    /// a moment so the spy can see its command line.
    static func fakeOpener(in world: DaemonHarness) throws -> String {
        let bin = world.keyring.root.appendingPathComponent("fakebin").path
        try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
        let script = """
            #!/bin/sh
            cp "$1" "$FAKE_OPENER_RECORD.page"
            stat -c %a "$1" > "$FAKE_OPENER_RECORD.mode"
            sleep 2
            echo "$@" > "$FAKE_OPENER_RECORD.argv"
            """
        try script.write(toFile: bin + "/xdg-open", atomically: true, encoding: .utf8)
        chmod(bin + "/xdg-open", 0o755)
        return bin
    }

    /// `seconds` of reading every /proc/*/cmdline and environ it can, looking for the URL.
    static let spy = """
        import glob, os, sys, time
        # Built from pieces so that no command line holds it but the URL's: this script's own
        # text is in its command line.
        needle = b"code_" + b"challenge="
        me = "/proc/%d/" % os.getpid()
        end = time.time() + float(sys.argv[1])
        saw_url = False
        opener_at = None
        # Until the deadline, or three seconds after xdg-open showed up (it lives two).
        while time.time() < end and (opener_at is None or time.time() < opener_at + 3):
            for path in glob.glob("/proc/[0-9]*/cmdline") + glob.glob("/proc/[0-9]*/environ"):
                if path.startswith(me):
                    continue
                try:
                    data = open(path, "rb").read()
                except OSError:
                    continue
                if needle in data:
                    saw_url = True
                if b"sign-in-" in data and opener_at is None:
                    opener_at = time.time()
            time.sleep(0.005)
        saw_opener = opener_at is not None
        print("saw opener: %s" % saw_opener)
        print("saw url: %s" % saw_url)
        print("done", flush=True)
        """

    /// A forged redirect with the right state, then `count` connections held open: reports
    /// how each ended.
    static let attacker = """
        import socket, sys, time
        port, state, count = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
        forged = socket.create_connection(("127.0.0.1", port), timeout=20)
        try:
            forged.sendall(("GET /callback?code=forged-code&state=%s HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\n\\r\\n" % state).encode())
        except OSError:
            pass
        try:
            answer = forged.recv(100)
        except OSError:
            answer = b""
        print("forged: %s" % ("closed unanswered" if not answer else answer[:40]))
        held = [socket.create_connection(("127.0.0.1", port), timeout=20) for _ in range(count)]
        closed = 0
        for connection in held:
            try:
                if connection.recv(1) == b"":
                    closed += 1
            except OSError:
                closed += 1
        print("flood: %d of %d closed" % (closed, count), flush=True)
        """

    /// One HTTP GET on loopback as this process's user; the raw answer.
    static func get(port: Int, path: String) throws -> String {
        let fd = try LoopbackSocket.connect(port: port)
        defer { close(fd) }
        let request = Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".utf8)
        _ = request.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count <= 0 { break }
            answer += buffer[0..<count]
        }
        return String(decoding: answer, as: UTF8.self)
    }
}
