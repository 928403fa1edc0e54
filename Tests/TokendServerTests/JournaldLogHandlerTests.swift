import Testing
@testable import TokendServer

#if canImport(Glibc)
import Glibc
#endif

/// Priority prefixes (`<6>`) only where journald reads them: stderr is the stream systemd named
/// in JOURNAL_STREAM; on a terminal or a file they are noise (issue 46).
@Suite struct JournaldLogHandlerTests {
    /// stderr's own "device:inode", as systemd writes JOURNAL_STREAM.
    private func stderrStream() -> String {
        var status = stat()
        #expect(fstat(STDERR_FILENO, &status) == 0)
        return "\(status.st_dev):\(status.st_ino)"
    }

    @Test func prefixesOnlyWhenStderrIsTheNamedStream() {
        #expect(JournaldLogHandler.stderrIsJournal(["JOURNAL_STREAM": stderrStream()]))
        #expect(!JournaldLogHandler.stderrIsJournal([:]), "no systemd: a terminal or a file")
        #expect(!JournaldLogHandler.stderrIsJournal(["JOURNAL_STREAM": "8:1"]), "inherited, but stderr went elsewhere")
        #expect(!JournaldLogHandler.stderrIsJournal(["JOURNAL_STREAM": "not:numbers"]))
        #expect(!JournaldLogHandler.stderrIsJournal(["JOURNAL_STREAM": "99999999999999999999999:1"]), "out of range: no trap")
    }
}
