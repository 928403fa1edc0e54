import Foundation
import Testing
import TokendTestSupport

/// tpm2-tss is loaded when the `tpm2` store is first used, not linked (issue 47): a daemon on the
/// default store never maps it, nor the libcrypto it brings; one on `tpm2` loads it and serves.
@Suite struct TPM2LoadingTests {
    /// The files of tpm2-tss and OpenSSL's libcrypto (which only tpm2-tss brings into tokend)
    /// that the process has mapped.
    static func tss2Mappings(_ pid: Int32) throws -> [String] {
        let files = try processMappings(pid).compactMap { $0.dropFirst(5).first }
        return Set(files.map(String.init).filter { $0.contains("/libtss2-") || $0.contains("/libcrypto.so") }).sorted()
    }

    @Test func theDefaultStoreNeverMapsTPM2TSS() async throws {
        try await withWorld { world in
            try await world.importNewUser()
            let token = try await world.tokenctl(["token", "work"])
            #expect(token.status == 0, "\(token.stderr)")
            let pid = try #require(world.daemonPID)
            #expect(try Self.tss2Mappings(pid) == [])
        }
    }

    @Test func theTPM2StoreLoadsItOnFirstUseAndServes() async throws {
        try await withStore(.tpm2) { store in
            try await store.startDaemon()
            let world = store.world
            let session = try await world.importNewUser()
            try await poll("the session is sealed") { await store.storedSessionOnceReadable()?.refreshToken == session.refreshToken }
            let token = try await world.tokenctl(["token", "work"])
            #expect(token.status == 0, "\(token.stderr)")
            let pid = try #require(world.daemonPID)
            let mapped = try Self.tss2Mappings(pid)
            #expect(["esys", "tctildr", "mu", "rc"].allSatisfy { library in mapped.contains { $0.contains("/libtss2-\(library).so") } }, "\(mapped)")
        }
    }
}
