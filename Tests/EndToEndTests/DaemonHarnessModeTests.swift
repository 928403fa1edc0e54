import CTokendShims
import Foundation
import Testing
import TokendCore
import TokendProtocol
import TokendTestSupport

/// The harness's two modes are what they say (issue 47, item 3): the same world, once with the
/// tokend binary and once with the daemon built in the test process, serving a session through
/// the real tokenctl and the real socket.
@Suite struct DaemonHarnessModeTests {
    @Test(arguments: DaemonHarness.Mode.allCases)
    func eachModeServesATokenFromTheDaemonItNames(mode: DaemonHarness.Mode) async throws {
        try await withWorld(mode: mode) { world in
            // Who answers on the socket, as the kernel says: this process only in-process.
            let client = try BlockingClient(path: world.socketPath)
            var peer = tokend_peer_credentials()
            #expect(tokend_peer_credentials_of(try #require(client.descriptor), &peer) == 0)
            #expect((peer.pid == getpid()) == (mode == .inProcess), "the socket's peer is \(peer.pid), this process \(getpid())")
            #expect((world.daemonPID == nil) == (mode == .inProcess))

            let session = try await world.importNewUser()
            let token = try await world.tokenctl(["token", "work"])
            #expect(token.status == 0, "\(token.stderr)")
            #expect(IDTokenClaims(token: String(token.stdout.dropLast()))?.uid == session.uid)
            // The import's refresh reached the fake, over loopback or through the in-process hook.
            #expect(world.fake.requests.contains { $0.path.contains("securetoken") })
            #expect(try await world.storedSession()?.refreshToken != nil, "the session is in the store")
            // Both write the daemon's lines where the world keeps them.
            #expect(world.daemonLog.contains("listening"), "\(world.daemonLog)")
            #expect(!world.daemonLog.contains(session.refreshToken))
        }
    }
}
