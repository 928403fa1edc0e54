import CTokendTPM2
import Glibc
import Testing
@testable import TokendKeyring

/// The `tpm2` store loads tpm2-tss at its first use (issue 47): a system without one of its
/// libraries, or with one too old for a function the store calls, gets a store state that names
/// what is missing and what to install, never a crash. The made-up sonames go through the
/// store's own loading (`tokend_tpm2_try_libraries`), which leaves the process's own load alone.
@Suite struct TPM2LibraryTests {
    /// The store's loading of `sonames`: its result and what it says failed.
    func load(_ sonames: [String]) -> (rc: Int32, said: String) {
        var error = [CChar](repeating: 0, count: 512)
        let copies = sonames.map { strdup($0) }
        defer { copies.forEach { free($0) } }
        let rc = copies.map { UnsafePointer($0) }.withUnsafeBufferPointer { names in
            error.withUnsafeMutableBufferPointer { tokend_tpm2_try_libraries(names.baseAddress, $0.baseAddress, $0.count) }
        }
        return (rc, String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }

    /// The error the store reports for that result.
    func storeError(_ loaded: (rc: Int32, said: String)) -> KeyringError {
        let backend = TPM2Backend(directory: "/nonexistent/tokend/tpm2", tcti: { nil })
        return loaded.said.withCString { backend.failure(loaded.rc, $0, tcti: nil) }
    }

    @Test func theStoreNamesFourLibrariesThatLoadHere() {
        #expect(TPM2Backend.librarySonames == ["libtss2-esys.so.0", "libtss2-tctildr.so.0", "libtss2-mu.so.0", "libtss2-rc.so.0"])
        let loaded = load(TPM2Backend.librarySonames)
        #expect(loaded.rc == 0, "libtss2-dev's runtime libraries are a build dependency: \(loaded.said)")
    }

    @Test(arguments: 0..<4) func aMissingLibraryIsAStateThatNamesItAndWhatToInstall(_ index: Int) {
        var sonames = TPM2Backend.librarySonames
        sonames[index] = "libtokend-made-up-\(index).so.0"
        let loaded = load(sonames)
        #expect(tokend_tpm2_is_missing_library(loaded.rc) != 0)
        #expect(tokend_tpm2_is_unreachable(loaded.rc) == 0 && tokend_tpm2_is_busy(loaded.rc) == 0 && tokend_tpm2_is_foreign(loaded.rc) == 0)
        let error = storeError(loaded)
        #expect(error.code == .unavailable)
        #expect(error.message.contains(sonames[index]), "\(error.message)")
        let steps = error.steps ?? ""
        for soname in TPM2Backend.librarySonames { #expect(steps.contains(soname), "\(steps)") }
        #expect(steps.contains("apt-get install libtss2-esys-3.0.2-0 libtss2-tctildr0 libtss2-mu0 libtss2-rc0"), "\(steps)")
        #expect(steps.contains("restart tokend"), "\(steps)")
    }

    /// An older tpm2-tss lacks a function: libtss2-mu in ESYS's place loads, but holds no Esys_*.
    @Test func aLibraryWithoutAFunctionTheStoreCallsIsNamedWithIt() {
        var sonames = TPM2Backend.librarySonames
        sonames[0] = sonames[2]
        let loaded = load(sonames)
        #expect(tokend_tpm2_is_missing_library(loaded.rc) != 0)
        #expect(loaded.said == "libtss2-mu.so.0 has no Esys_Initialize", "\(loaded.said)")
        #expect(storeError(loaded).message.contains("libtss2-mu.so.0 has no Esys_Initialize"))
    }
}
