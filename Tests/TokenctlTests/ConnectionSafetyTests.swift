import Foundation
import Testing
import TokendProtocol
import TokendTestSupport

@testable import TokenctlKit

#if canImport(Glibc)
import Glibc
#endif

/// Issue 8, items 9 and 16: tokenctl reads any reply the daemon may send, never waits forever
/// to connect, and sends nothing to a socket another user serves.
@Suite struct ConnectionSafetyTests {
    /// A `status` of hundreds of accounts is far longer than a request may be: 1 MiB is read.
    @Test func aReplyOfOneMebibyteIsRead() throws {
        let message = String(repeating: "x", count: 500)
        let accounts = (0..<2000).map { #"{"name":"a\#($0)","provider":"firebase","state":"needs_login","keyring":"available","message":"\#(message)"}"# }
        let reply = #"{"id":1,"ok":true,"accounts":[\#(accounts.joined(separator: ","))]}"#
        #expect(reply.utf8.count > 1_000_000)
        let daemon = try FakeDaemon(replies: [reply])
        defer { daemon.stop() }
        let console = CapturingConsole()
        #expect(runTokenctl(["status", "--socket", daemon.path], console: console) == 0, "\(console.stderr)")
        #expect(console.stdout.contains("a1999"))
    }

    /// A listener that never accepts, its backlog full: connect gives up instead of hanging.
    @Test func aFullBacklogTimesOut() throws {
        var template = Array("/tmp/tokenctl-test-XXXXXX".utf8CString)
        let directory = String(cString: try #require(mkdtemp(&template)))
        defer { _ = rmdir(directory) }
        let path = directory + "/tokend.sock"
        let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer {
            close(listener)
            unlink(path)
        }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: Array(path.utf8))
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        try #require(bound == 0 && listen(listener, 0) == 0)
        // Fill the backlog (0 admits one pending connection on Linux), then one more must wait.
        var held: [BlockingClient] = []
        var failure: BlockingClient.Failure?
        for _ in 0..<4 where failure == nil {
            do {
                held.append(try BlockingClient(path: path, connectTimeout: 0.3))
            } catch {
                failure = error
            }
        }
        #expect(failure?.code == .timedOut, "\(String(describing: failure))")
    }

    /// A socket served by another user (here `nobody`, through socat): tokenctl import refuses
    /// before sending a byte, so the refresh token never reaches it.
    @Test(.enabled(if: getuid() == 0, "needs root to run a server as another user"))
    func aSocketOfAnotherUserGetsNothing() async throws {
        var template = Array("/tmp/tokenctl-test-XXXXXX".utf8CString)
        let directory = String(cString: try #require(mkdtemp(&template)))
        chmod(directory, 0o777)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/tokend.sock"
        let received = directory + "/received"
        let server = try ChildProcess.start(
            "/usr/bin/setpriv",
            ["--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/socat", "-u", "UNIX-LISTEN:\(path),fork", "CREATE:\(received)"],
            environment: [:])
        defer { ChildProcess.stop(server) }
        let deadline = Date().addingTimeInterval(20)
        while access(path, F_OK) != 0, Date() < deadline { usleep(20_000) }  // polling for the socket file
        let console = CapturingConsole(input: "CANARY-refresh-token-8e1\n")
        let status = runTokenctl(["import", "work", "--socket", path], console: console)
        #expect(status == 69, "\(console.stderr)")
        #expect(console.stderr.contains("uid 65534"), "\(console.stderr)")
        let leaked = (try? String(contentsOfFile: received, encoding: .utf8)) ?? ""
        #expect(!leaked.contains("CANARY"), "the secret reached another user's server")
    }
}
