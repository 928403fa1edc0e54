import Foundation
import Testing

/// TokendCore does no I/O and reads no real time (docs/architecture.md, "Modules"): every file of
/// it imports only the allowed modules and names no system call, thread, queue, file or process
/// API. What does lives in TokendSystem. A plain text scan, comments dropped: simple enough to
/// trust, strict enough that a timer thread or a `getenv` moved back into the core fails it.
@Suite struct CoreIsPureTests {
    /// FoundationEssentials has no I/O of its own that the names below do not catch (its
    /// `Data(contentsOf:)` is banned by name); Synchronization is locks and atomics.
    static let allowedImports: Set<String> = ["FoundationEssentials", "Synchronization"]
    /// Full Foundation, only as the fallback of the one file that picks Foundation for the core,
    /// for a toolchain without FoundationEssentials (never taken on Linux).
    static let allowedFallback = (file: "Foundation+Shim.swift", module: "Foundation")

    /// Names that do I/O, start threads or read real time. A regular expression each; `\b`
    /// keeps `readLine`-like names of the core's own from matching by accident.
    static let bannedNames: [String] = [
        #"\b(open|openat|read|write|close|socket|connect|fopen|stat|poll|select|unlink|mkdir|rename)\("#,
        #"\b(clock_gettime|gettimeofday|time|usleep|nanosleep)\("#,
        #"\bepoll_\w+"#, #"\btimerfd_\w+"#, #"\bpthread_\w+"#, #"\bgetenv\b"#, #"\benviron\b"#,
        #"\bThread\b"#, #"\bDispatch\w*"#, #"\bFileManager\b"#, #"\bFileHandle\b"#, #"\bProcessInfo\b"#,
        #"\bProcess\("#, #"\bURLSession\b"#, #"contentsOf:"#, #"\bTask\.sleep\b"#,
        #"\bDate\(\)"#, #"\bDate\.now\b"#, #"\bContinuousClock\b"#, #"\bSuspendingClock\b"#,
    ]

    /// What is wrong with one source file, one line each ("File.swift:12: …").
    static func violations(in source: String, file: String) -> [String] {
        // Constant patterns: a typo in one fails every run of this test at once. Simple word
        // boundaries: Unicode's would take `Thread.detachNewThread` for one word.
        let banned = bannedNames.map { try! Regex($0).wordBoundaryKind(.simple) }
        var found: [String] = []
        var inBlockComment = false
        for (number, rawLine) in source.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            var line = String(rawLine)
            if inBlockComment {
                guard let end = line.range(of: "*/") else { continue }
                line = String(line[end.upperBound...])
                inBlockComment = false
            }
            if let start = line.range(of: "/*"), line.range(of: "*/", range: start.upperBound..<line.endIndex) == nil {
                line = String(line[..<start.lowerBound])
                inBlockComment = true
            }
            if let comment = line.range(of: "//") { line = String(line[..<comment.lowerBound]) }
            let place = "\(file):\(number + 1)"
            if let match = line.firstMatch(of: /^\s*(?:@\w+\s+)*import\s+(?:\w+\s+)?([A-Za-z_][\w.]*)/) {
                let module = String(match.1)
                let allowed = allowedImports.contains(module) || (file == allowedFallback.file && module == allowedFallback.module)
                if !allowed { found.append("\(place): imports \(module); TokendCore may import only \(allowedImports.sorted().joined(separator: ", "))") }
            }
            for regex in banned {
                if let match = line.firstMatch(of: regex) {
                    found.append("\(place): calls \(line[match.range]), which is I/O or real time: it belongs in TokendSystem")
                }
            }
        }
        return found
    }

    static var coreDirectory: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Sources/TokendCore")
    }

    @Test func theCoreImportsAndCallsNothingThatDoesIO() throws {
        // Every file below the directory, folders included (Account/ holds the account's state).
        let files = try FileManager.default.subpathsOfDirectory(atPath: Self.coreDirectory.path).filter { $0.hasSuffix(".swift") }.sorted()
        // The directory was found and read: an empty list would pass every check below.
        #expect(files.contains("Account/AccountMachine.swift") && files.contains("TimerSource.swift"), "\(files)")
        var found: [String] = []
        for file in files {
            let source = try String(contentsOf: Self.coreDirectory.appendingPathComponent(file), encoding: .utf8)
            found += Self.violations(in: source, file: file)
        }
        #expect(found.isEmpty, "TokendCore is not pure:\n\(found.joined(separator: "\n"))")
    }

    /// The check itself: a timer thread, an environment read and a clock read pasted into the core
    /// are each caught; the same names in comments and the allowed imports are not.
    @Test func theCheckCatchesWhatItBans() {
        let impure = """
            import Glibc
            import Synchronization
            @_exported import Dispatch
            let fd = timerfd_create(CLOCK_MONOTONIC, 0)
            let home = getenv("HOME")
            let now = Date()
            Thread.detachNewThread {}
            let n = read(fd, &buffer, 8)
            """
        let found = Self.violations(in: impure, file: "Pasted.swift")
        for expected in ["Pasted.swift:1: imports Glibc", "Pasted.swift:3: imports Dispatch", "Pasted.swift:4: calls timerfd_create",
            "Pasted.swift:5: calls getenv", "Pasted.swift:6: calls Date()", "Pasted.swift:7: calls Thread", "Pasted.swift:8: calls read("]
        {
            #expect(found.contains { $0.hasPrefix(expected) }, "\(expected) not caught in \(found)")
        }
        #expect(!found.contains { $0.hasPrefix("Pasted.swift:2:") })
        let pure = """
            import FoundationEssentials
            // Thread, getenv and Date() in a comment are words, not calls.
            /* read(fd) in a block
               comment, open( too */
            public func sleep(until deadline: Date) async -> Bool { true }
            """
        #expect(Self.violations(in: pure, file: "Pure.swift").isEmpty)
        #expect(Self.violations(in: "import Foundation", file: "Foundation+Shim.swift").isEmpty)
        #expect(!Self.violations(in: "import Foundation", file: "Other.swift").isEmpty)
        #expect(!Self.violations(in: "import Glibc", file: "Timestamp.swift").isEmpty, "the calendar is arithmetic now: no file may import Glibc")
    }
}
