import Foundation
import Testing
import TokendCore
import TokendKeyring
import TokendProtocol
@testable import TokendServer
import TokendTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// The daemon's half of the systemd protocol, without a manager: which passed sockets it trusts,
/// how often it pings the watchdog, and the one-line status it reports.
@Suite struct SystemdIntegrationTests {
    /// A Unix socket bound in a private directory, chmod'ed to `mode`, listening or not.
    struct BoundSocket {
        let directory: TemporaryDirectory
        let descriptor: CInt
        var path: String { directory.appending("s.sock") }

        init(type: Int32 = Int32(SOCK_STREAM.rawValue), mode: mode_t = 0o600, listening: Bool = true) throws {
            directory = try TemporaryDirectory(prefix: "tokend-activation")
            descriptor = socket(AF_UNIX, type, 0)
            let path = directory.appending("s.sock")
            let address = try #require(UnixSocketAddress(path: path))
            #expect(address.withSockaddr { bind(descriptor, $0, $1) } == 0)
            #expect(chmod(path, mode) == 0)
            if listening { #expect(listen(descriptor, 1) == 0) }
        }

        func close() {
            _ = Glibc.close(descriptor)
            try? directory.remove()
        }
    }

    /// `$NOTIFY_SOCKET` as systemd sets it: a path, or "@name" for an abstract socket.
    @Test(arguments: [false, true])
    func notifyReachesAPathOrAnAbstractSocket(abstract: Bool) throws {
        let directory = try TemporaryDirectory(prefix: "tokend-notify")
        defer { try? directory.remove() }
        let name = abstract ? "tokend-notify-\(getpid())-\(UInt32.random(in: 0...UInt32.max))" : directory.appending("notify")
        let receiver = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        defer { _ = Glibc.close(receiver) }
        let address = try #require(abstract ? UnixSocketAddress(abstractName: name) : UnixSocketAddress(path: name))
        #expect(address.withSockaddr { bind(receiver, $0, $1) } == 0)
        SystemdIntegration.notify("READY=1", environment: ["NOTIFY_SOCKET": abstract ? "@" + name : name])
        var buffer = [UInt8](repeating: 0, count: 64)
        let count = recv(receiver, &buffer, buffer.count, Int32(MSG_DONTWAIT))
        #expect(count == 7 && String(decoding: buffer.prefix(7), as: UTF8.self) == "READY=1")
    }

    @Test func aListening0600UnixStreamSocketIsAdopted() throws {
        let bound = try BoundSocket()
        defer { bound.close() }
        try SystemdIntegration.checkListeningSocket(bound.descriptor)
        #expect(SystemdIntegration.boundPath(bound.descriptor) == bound.path)
    }

    @Test(arguments: [
        ("mode 0666", Int32(SOCK_STREAM.rawValue), mode_t(0o666), true, "must be 0600"),
        ("mode 0640", Int32(SOCK_STREAM.rawValue), mode_t(0o640), true, "must be 0600"),
        ("not listening", Int32(SOCK_STREAM.rawValue), mode_t(0o600), false, "not listening"),
        ("datagram", Int32(SOCK_DGRAM.rawValue), mode_t(0o600), false, "not a stream socket"),
    ])
    func anythingElseIsRefusedLoudly(_ case: String, type: Int32, mode: mode_t, listening: Bool, reason: String) throws {
        let bound = try BoundSocket(type: type, mode: mode, listening: listening)
        defer { bound.close() }
        let error = #expect(throws: DaemonError.self) { try SystemdIntegration.checkListeningSocket(bound.descriptor) }
        #expect(error?.code == .socket)
        #expect(error?.description.contains(reason) == true, "\(`case`): \(error?.description ?? "")")
    }

    @Test func anInternetSocketIsRefused() throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(descriptor) }
        let error = #expect(throws: DaemonError.self) { try SystemdIntegration.checkListeningSocket(descriptor) }
        #expect(error?.description.contains("not a Unix socket") == true)
    }

    @Test func socketsForSomeoneElseOrOfAnotherProcessAreNotTaken() throws {
        let pid = String(getpid())
        #expect(try SystemdIntegration.activatedDescriptor(environment: [:]) == nil)
        #expect(try SystemdIntegration.activatedDescriptor(environment: ["LISTEN_PID": "1", "LISTEN_FDS": "1"]) == nil)
        let misnamed = #expect(throws: DaemonError.self) {
            try SystemdIntegration.activatedDescriptor(environment: ["LISTEN_PID": pid, "LISTEN_FDS": "1", "LISTEN_FDNAMES": "other"])
        }
        #expect(misnamed?.description.contains("none named \"tokend\"") == true)
        let unnamedPair = #expect(throws: DaemonError.self) {
            try SystemdIntegration.activatedDescriptor(environment: ["LISTEN_PID": pid, "LISTEN_FDS": "2"])
        }
        #expect(unnamedPair?.description.contains("2 unnamed sockets") == true)
    }

    @Test func theWatchdogIsPingedAtHalfItsTimeout() {
        #expect(SystemdIntegration.watchdogInterval(environment: ["WATCHDOG_USEC": "30000000"]) == 15)
        #expect(SystemdIntegration.watchdogInterval(environment: ["WATCHDOG_USEC": "30000000", "WATCHDOG_PID": String(getpid())]) == 15)
        #expect(SystemdIntegration.watchdogInterval(environment: ["WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "1"]) == nil, "another process's watchdog")
        #expect(SystemdIntegration.watchdogInterval(environment: [:]) == nil)
        #expect(SystemdIntegration.watchdogInterval(environment: ["WATCHDOG_USEC": "0"]) == nil)
    }

    @Test func reloadingCarriesTheMonotonicClock() {
        let message = SystemdIntegration.reloadingMessage()
        #expect(message.hasPrefix("RELOADING=1\nMONOTONIC_USEC="))
        #expect(UInt64(message.split(separator: "=").last ?? "").map { $0 > 0 } == true)
    }

    @Test func theStatusLineCountsAccountsByState() async throws {
        let fixture = try await EngineFixture.make()
        try await withTearDown(fixture, tearDown: { await $0.shutdown() }) { fixture in
            #expect(await fixture.engine.statusSummary() == "1 account: 1 needs login")
            _ = try await fixture.importSession()
            #expect(await fixture.engine.statusSummary() == "1 account: 1 active")
            let second = Configuration(accounts: [
                "work": AccountConfiguration(name: "work", provider: .firebase(apiKey: "k", emulatorHost: fixture.fake.emulatorHost), refreshBefore: 300),
                "play": AccountConfiguration(name: "play", provider: .firebase(apiKey: "k", emulatorHost: fixture.fake.emulatorHost), refreshBefore: 300),
            ])
            #expect(await fixture.engine.adopt(second) == ["play"])
            #expect(await fixture.engine.statusSummary() == "2 accounts: 1 active, 1 waiting for keyring", "until its first keyring read")
            await fixture.engine.keyring.restore(["play"])
            #expect(await fixture.engine.statusSummary() == "2 accounts: 1 active, 1 needs login")
        }
    }
}
