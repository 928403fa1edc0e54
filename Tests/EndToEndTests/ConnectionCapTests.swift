import Foundation
import Testing
import TokendCore
import TokendTestSupport

/// docs/protocol.md's connection cap: tokend holds at most 1,024 connections at once; the next
/// one is told why (`unavailable`, so tokenctl exits 75) and closed, and the daemon serves again
/// as soon as a connection closes.
@Suite struct ConnectionCapTests {
    /// The connections are held by a child (python3, with its descriptor limit raised to the
    /// hard one), so neither this test process's descriptors nor its limit are in play. The child
    /// also runs the real tokenctl while it holds them, and prints what it saw as JSON.
    static let holder = #"""
        import json, resource, socket, subprocess, sys, time
        path, tokenctl, cap = sys.argv[1], sys.argv[2], int(sys.argv[3])
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        def line(s):
            data = b""
            while not data.endswith(b"\n"):
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
            return data.decode(errors="replace")
        def connect():
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(60)
            s.connect(path)
            return s
        held = []
        for i in range(cap):
            s = connect()
            s.sendall(b'{"op":"hello"}\n')
            reply = line(s)
            if '"ok":true' not in reply:
                print(json.dumps({"failed_at": i, "reply": reply}))
                sys.exit(1)
            held.append(s)
        over = connect()
        refusal = line(over)
        closed = over.recv(1) == b""
        full = subprocess.run([tokenctl, "token", "work"], capture_output=True, text=True, timeout=60)
        held.pop().close()
        deadline = time.monotonic() + 30
        while True:
            again = subprocess.run([tokenctl, "token", "work"], capture_output=True, text=True, timeout=60)
            if again.returncode == 0 or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        print(json.dumps({"held": len(held) + 1, "refusal": refusal, "closed": closed,
                          "full_status": full.returncode, "full_stderr": full.stderr, "freed_status": again.returncode}))
        """#

    struct Seen: Decodable {
        var held: Int
        var refusal: String
        var closed: Bool
        var full_status: Int32
        var full_stderr: String
        var freed_status: Int32
    }

    @Test func theConnectionOverTheCapIsToldWhyAndASlotFreesAgain() async throws {
        let world = try await DaemonHarness.start()
        try await withTearDown(world, tearDown: { await $0.shutdown() }) { world in
            try await world.importNewUser()
            let socketPath = world.socketPath
            let environment = world.environment
            let result = try await offPool {
                try ChildProcess.run(
                    "/usr/bin/env", ["python3", "-c", Self.holder, socketPath, DaemonHarness.binDirectory + "/tokenctl", "1024"],
                    environment: environment, timeout: 300)
            }
            #expect(result.status == 0, "\(result.stdout) \(result.stderr)")
            let seen = try JSONDecoder().decode(Seen.self, from: Data(result.stdout.utf8))
            #expect(seen.held == 1024)
            #expect(seen.refusal.contains("\"code\":\"unavailable\""), "\(seen.refusal)")
            #expect(seen.refusal.contains("1024 connections"), "\(seen.refusal)")
            #expect(seen.closed, "the connection over the cap is closed after its refusal")
            #expect(seen.full_status == 75, "tokenctl over the cap: \(seen.full_stderr)")
            #expect(seen.full_stderr.contains("1024 connections"), "\(seen.full_stderr)")
            #expect(seen.full_stderr.split(separator: "\n").count <= 2, "\(seen.full_stderr)")
            #expect(seen.freed_status == 0, "a closed connection frees its slot")
            #expect(try await world.tokenctl(["token", "work"]).status == 0)
        }
    }
}
