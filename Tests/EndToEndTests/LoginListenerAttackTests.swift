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
            fake.script([.object(200, ["access_token": "real-access", "refresh_token": "real-refresh", "expires_in": 600])])
            let bin = try Self.fakeOpener(in: world)
            // The spy watches every command line and environment it can read from before the
            // login starts until this test's xdg-open has gone, and xdg-open stays until the login
            // has ended: each step waits for an event, so a loaded machine only makes it slower.
            let spyOutput = world.keyring.root.appendingPathComponent("spy.out").path
            let spy = try ChildProcess.start(
                "/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c", Self.spy, String(Int(3 * Patience.seconds)), bin + "/xdg-open"],
                environment: ["PATH": "/usr/bin:/bin"], output: spyOutput)
            defer { ChildProcess.stop(spy) }
            let spyLines = { (try? String(contentsOfFile: spyOutput, encoding: .utf8)) ?? "" }
            try await poll("the spy is watching") { spyLines().contains("watching") }
            var environment = world.environment
            environment["DISPLAY"] = ":99"
            environment["PATH"] = bin + ":/usr/bin:/bin"
            environment["FAKE_OPENER_RECORD"] = world.keyring.root.appendingPathComponent("opener").path
            let release = environment["FAKE_OPENER_RECORD"]! + ".release"
            defer { _ = FileManager.default.createFile(atPath: release, contents: nil) }
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
            // Written last, by one echo: whole once it ends in a newline.
            try await poll("xdg-open ran") { ((try? String(contentsOfFile: opened, encoding: .utf8)) ?? "").hasSuffix("\n") }
            try await poll("the spy saw xdg-open") { spyLines().contains("saw opener") }
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

            // A page of a site that resolves its name to 127.0.0.1 (DNS rebinding), in the user's
            // own browser (same uid), with the state and an error: refused on its Host, it ends
            // nothing (before: the login failed with 77).
            let rebound = try LoopbackSocket.exchange(
                port: port, "GET /callback?error=access_denied&state=\(state) HTTP/1.1\r\nHost: rebind.example:\(port)\r\n\r\n")
            #expect(rebound.hasPrefix("HTTP/1.1 421") && rebound.hasSuffix("\r\n\r\n"), "\(rebound)")

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

            // xdg-open goes; the spy, which saw its command line (so it was looking) from before
            // the login began until now, never saw the URL.
            _ = FileManager.default.createFile(atPath: release, contents: nil)
            try await poll("the spy finished") { spyLines().contains("done") }
            let seen = spyLines()
            #expect(seen.contains("saw url: False"), "\(seen)")
        }
    }

    /// An xdg-open that records its argv, the page it was given and that page's mode, and stays
    /// until the test releases it (at most five minutes, should a test die first) so that the
    /// spy sees its command line however loaded the machine is.
    static func fakeOpener(in world: DaemonHarness) throws -> String {
        let bin = world.keyring.root.appendingPathComponent("fakebin").path
        try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
        let script = """
            #!/bin/sh
            cp "$1" "$FAKE_OPENER_RECORD.page"
            stat -c %a "$1" > "$FAKE_OPENER_RECORD.mode"
            echo "$@" > "$FAKE_OPENER_RECORD.argv"
            i=0
            while [ ! -e "$FAKE_OPENER_RECORD.release" ] && [ $i -lt 3000 ]; do sleep 0.1; i=$((i + 1)); done
            """
        try script.write(toFile: bin + "/xdg-open", atomically: true, encoding: .utf8)
        chmod(bin + "/xdg-open", 0o755)
        return bin
    }

    /// Reads every /proc/*/cmdline and environ it can, looking for the URL, until the opener
    /// named by its second argument has come and gone (or `seconds` have passed, for a broken
    /// test). Says "watching" after its first pass and "saw opener" at once.
    static let spy = """
        import glob, os, sys, time
        # Built from pieces so that no command line holds it but the URL's: this script's own
        # text is in its command line.
        needle = b"code_" + b"challenge="
        opener = sys.argv[2].encode()
        me = "/proc/%d/" % os.getpid()
        end = time.time() + float(sys.argv[1])
        saw_url = False
        saw_opener = False
        first = True
        while time.time() < end:
            opener_now = False
            for path in glob.glob("/proc/[0-9]*/cmdline") + glob.glob("/proc/[0-9]*/environ"):
                if path.startswith(me):
                    continue
                try:
                    data = open(path, "rb").read()
                except OSError:
                    continue
                if needle in data:
                    saw_url = True
                if opener in data and b"sign-in-" in data:
                    opener_now = True
            if first:
                print("watching", flush=True)
                first = False
            if opener_now and not saw_opener:
                saw_opener = True
                print("saw opener", flush=True)
            if saw_opener and not opener_now:
                break
            time.sleep(0.005)
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
            forged.sendall(("GET /callback?code=forged-code&state=%s HTTP/1.1\\r\\nHost: 127.0.0.1:%d\\r\\n\\r\\n" % (state, port)).encode())
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

    /// One HTTP GET on loopback as this process's user, addressed as a browser would; the raw answer.
    static func get(port: Int, path: String) throws -> String {
        try LoopbackSocket.exchange(port: port, "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n\r\n")
    }
}
