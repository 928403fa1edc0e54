import Foundation
import Testing
import TokendCore
import TokendKeyring
import TokendTestSupport

/// `LibsecretStore` with no usable session bus. libsecret binds to one bus per process, so each
/// case runs in a child: this test binary again, filtered to `report()`, with the environment
/// under test. The child writes what the store answered to a file; the assertions are made here.
@Suite
struct NoSessionBusTests {
    /// Set in the child only: where to write the report.
    static let reportVariable = "TOKEND_KEYRING_TEST_NO_BUS_REPORT"
    /// Every store call in the child has a deadline; this bounds a child that hangs anyway, with
    /// room for loading the whole test bundle on two loaded cores.
    static let childTimeout: Double = 120

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
    @Test(.enabled(if: ProcessInfo.processInfo.environment[NoSessionBusTests.reportVariable] != nil))
    func report() async throws {
        let path = try #require(ProcessInfo.processInfo.environment[Self.reportVariable])
        // Longer than the default: the failures under test are fast ones, and a slow CI machine
        // must not turn them into timeouts.
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
        try JSONEncoder().encode(report).write(to: URL(fileURLWithPath: path))
    }

    private func runChild(busAddress: String?) throws -> Report {
        let reportFile = FileManager.default.temporaryDirectory.appendingPathComponent("tokend-no-bus-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: reportFile) }
        // Without a display GDBus cannot autolaunch a bus: the no-bus case stays a no-bus case.
        let child = try ChildProcess.runTest(
            "NoSessionBusTests/report",
            changing: [Self.reportVariable: reportFile.path, "DBUS_SESSION_BUS_ADDRESS": busAddress, "DISPLAY": nil, "WAYLAND_DISPLAY": nil],
            timeout: Self.childTimeout)
        #expect(child.status == 0, "\(child.stderr)")
        let data = try #require(try? Data(contentsOf: reportFile), "the child wrote no report")
        return try JSONDecoder().decode(Report.self, from: data)
    }
}
