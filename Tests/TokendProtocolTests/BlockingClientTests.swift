import Testing
import TokendCore
@testable import TokendProtocol
#if canImport(Glibc)
import Glibc
#endif

@Suite struct BlockingClientTests {
    func openDescriptorCount() -> Int {
        (try? FileManagerless.count(directory: "/proc/self/fd")) ?? -1
    }

    /// A failed connect releases its socket (through deinit, exactly once: see the comment in
    /// `BlockingClient.init`). Fifty failures leave the descriptor table as it was.
    @Test func aFailedConnectLeaksNoDescriptor() {
        let before = openDescriptorCount()
        for _ in 0..<50 {
            #expect(throws: BlockingClient.Failure.self) { try BlockingClient(path: "/nonexistent/tokend.sock") }
        }
        #expect(openDescriptorCount() == before)
    }
}

/// Counts directory entries with opendir/readdir: no Foundation in this test target.
enum FileManagerless {
    static func count(directory: String) throws -> Int {
        guard let handle = opendir(directory) else { return -1 }
        defer { closedir(handle) }
        var count = 0
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name != "." && name != ".." { count += 1 }
        }
        return count
    }
}
