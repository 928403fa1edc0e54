import Foundation
import Testing
import TokendCore
import TokendKeyring

/// `LibsecretStore` with no usable session bus. libsecret binds to one bus per process, so each
/// case runs in a child: this test binary again, filtered to `report()`, with the environment
/// under test. The child prints what the store answered; the assertions are made here.
@Suite
struct NoSessionBusTests {
    static let modeVariable = "TOKEND_KEYRING_TEST_NO_BUS_CHILD"
    static let marker = "TOKEND-NO-BUS-RESULT "

    struct Report: Codable {
        var state: String
        var codes: [String]
        var domain: String?
        var message: String
        var tokendCode: String
        var tokendMessage: String
    }

    @Test func noBusAddressAndNoDisplayIsUnavailable() throws {
        let report = try runChild(busAddress: nil)
        #expect(report.state == "unavailable")
        #expect(report.codes == ["unavailable", "unavailable", "unavailable", "unavailable"])
        #expect(report.domain == "g-io-error-quark")
        #expect(report.message.contains("autolaunch"))
        #expect(report.tokendCode == "keyring_unavailable")
        #expect(report.tokendMessage.contains("start gnome-keyring-daemon"))
    }

    @Test func aDeadBusSocketIsUnavailable() throws {
        let socket = FileManager.default.temporaryDirectory.appendingPathComponent("tokend-no-bus-\(UUID().uuidString)")
        let report = try runChild(busAddress: "unix:path=\(socket.path)")
        #expect(report.state == "unavailable")
        #expect(report.codes == ["unavailable", "unavailable", "unavailable", "unavailable"])
        #expect(report.domain == "g-io-error-quark")
        #expect(report.tokendCode == "keyring_unavailable")
    }

    /// The child's side: only does something in a child started by `runChild`.
    @Test(.enabled(if: ProcessInfo.processInfo.environment[NoSessionBusTests.modeVariable] != nil))
    func report() async throws {
        let store = LibsecretStore(timeout: 10)
        let state = await store.state()
        let load = await store.load(account: "nobody")
        let results: [KeyringError?] = [
            load.failure,
            await store.save(TokenSet(refreshToken: "never-stored"), account: "nobody").failure,
            await store.delete(account: "nobody").failure,
            await store.accounts().failure,
        ]
        let error = load.failure ?? KeyringError(.failed, "load did not fail")
        let mapped = TokendError(error)
        let report = Report(
            state: state.rawValue, codes: results.map { $0?.code.rawValue ?? "success" }, domain: error.domain,
            message: error.message, tokendCode: mapped.code.rawValue, tokendMessage: mapped.message)
        print(Self.marker + String(decoding: try JSONEncoder().encode(report), as: UTF8.self))
    }

    private func runChild(busAddress: String?) throws -> Report {
        var environment = ProcessInfo.processInfo.environment
        environment[Self.modeVariable] = "1"
        environment["DBUS_SESSION_BUS_ADDRESS"] = busAddress
        // Without a display GDBus cannot autolaunch a bus: the no-bus case stays a no-bus case.
        environment["DISPLAY"] = nil
        environment["WAYLAND_DISPLAY"] = nil
        let child = Process()
        child.executableURL = URL(fileURLWithPath: "/proc/self/exe")
        child.arguments = ["--testing-library", "swift-testing", "--filter", "NoSessionBusTests/report"]
        child.environment = environment
        let output = Pipe()
        child.standardOutput = output
        child.standardError = FileHandle.nullDevice
        try child.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        child.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self)
        let line = try #require(
            text.split(separator: "\n").first { $0.hasPrefix(Self.marker) }, "child printed no report:\n\(text)")
        #expect(child.terminationStatus == 0)
        return try JSONDecoder().decode(Report.self, from: Data(line.dropFirst(Self.marker.count).utf8))
    }
}
