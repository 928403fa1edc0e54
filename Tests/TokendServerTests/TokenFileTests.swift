import Foundation
import Logging
import Synchronization
import Testing
import TokendCore
import TokendTestClock
import TokendTestSupport
@testable import TokendServer

/// Token files (Sinks/): the `sink` configuration, the refresh margin it adds, and `TokenFiles`
/// keeping real files in a temporary runtime directory in step with tokens on a manual clock.
@Suite struct TokenFileTests {
    static let runtime = ["XDG_RUNTIME_DIR": "/run/user/1000"]

    func parse(_ sink: String, environment: [String: String] = runtime) throws(ConfigurationError) -> Configuration {
        try Configuration.parse("""
            [account.work]
            provider = "firebase"
            api_key = "k"
            \(sink)
            """, path: "/c.toml", environment: environment)
    }

    @Test func aTableOrAnArrayOfTables() throws {
        let one = try parse(#"sink = { path = "aws-token", kind = "id", min_valid = "2m" }"#)
        #expect(one.accounts["work"]?.tokenFiles == [TokenFile(path: "/run/user/1000/tokend/sinks/aws-token", kind: .id, minValid: 120)])
        let two = try parse(#"sink = [{ path = "/run/user/1000/tokend/sinks/a" }, { path = "b", kind = "access", min_valid = 90 }]"#)
        #expect(two.accounts["work"]?.tokenFiles == [
            TokenFile(path: "/run/user/1000/tokend/sinks/a", kind: nil, minValid: TokenFile.defaultMinValid),
            TokenFile(path: "/run/user/1000/tokend/sinks/b", kind: .access, minValid: 90),
        ])
        // No path: named after the account and kind.
        #expect(try parse("sink = {}").accounts["work"]?.tokenFiles.first?.path == "/run/user/1000/tokend/sinks/work.id")
        // The longest min_valid moves the refresh earlier.
        #expect(two.accounts["work"]?.policy.fileMinValid == TokenFile.defaultMinValid)
    }

    @Test(arguments: [
        (#"sink = "aws""#, "must be a table"),
        (#"sink = [1]"#, "must be a table"),
        (#"sink = { path = "/home/u/.aws/token" }"#, "outside /run/user/1000/tokend/sinks"),
        (#"sink = { path = "/run/user/1000/tokend/sinks/x/y" }"#, "must be a file name"),
        (#"sink = { path = "../escape" }"#, "must be a file name"),
        (#"sink = { path = ".hidden" }"#, "must be a file name"),
        (#"sink = { path = "a", kind = "refresh" }"#, "kind must be"),
        (#"sink = { path = "a", min_valid = "0s" }"#, "min_valid must be"),
        (#"sink = { path = "a", min_valid = "13h" }"#, "min_valid must be"),
        (#"sink = { path = "a", mode = "0644" }"#, "unknown key mode"),
        (#"sink = { path = 1 }"#, "path must be a string"),
        (#"sink = [{ path = "a" }, { path = "a" }]"#, "named twice"),
    ])
    func mistakesNameTheKeyAndTheRule(sink: String, message: String) {
        #expect {
            _ = try parse(sink)
        } throws: { error in
            let error = error as? ConfigurationError
            return error?.key == "account.work.sink" && error?.line == 4 && error?.message.contains(message) == true
        }
    }

    @Test func withoutARuntimeDirectoryASinkIsAnError() {
        #expect(throws: ConfigurationError.self) { try parse(#"sink = { path = "a" }"#, environment: [:]) }
    }

    @Test func twoAccountsCannotShareAFile() {
        #expect {
            _ = try Configuration.parse("""
                [account.a]
                provider = "firebase"
                api_key = "k"
                sink = { path = "t" }
                [account.b]
                provider = "firebase"
                api_key = "k"
                sink = { path = "t" }
                """, path: "/c.toml", environment: Self.runtime)
        } throws: { error in
            (error as? ConfigurationError)?.message.contains("already the token file of account a") == true
        }
    }

    @Test func aFilesMinValidIsAddedToTheMarginUpToAThirdOfTheLifetime() {
        let policy = RefreshPolicy(refreshBefore: 300, fileMinValid: 300)
        #expect(policy.margin(lifetime: 3600) == 600)
        #expect(policy.margin(lifetime: 600) == 400, "each part at most a third: a refresh never follows the last at once")
        #expect(RefreshPolicy(refreshBefore: 300).margin(lifetime: 3600) == 300)
        #expect(RefreshPolicy(refreshBefore: 60, fileMinValid: 600).margin(expiresAt: Date(timeIntervalSince1970: 10_000), issuedAt: nil) == 660)
    }

    // MARK: - Files on disk

    /// Log lines, kept for a test to read.
    final class Lines: Sendable {
        let lines = Mutex<[String]>([])
        var all: [String] { lines.withLock { $0 } }
    }

    struct CapturedLog: LogHandler {
        let sink: Lines
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .debug
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) {
            sink.lines.withLock { $0.append("\(event.level) \(event.message)") }
        }
    }

    struct World {
        let clock = ManualClock()
        let directory: TemporaryDirectory
        let files: TokenFiles
        let log = Lines()
        var sinks: String { directory.appending("tokend/sinks") }

        init() throws {
            directory = try TemporaryDirectory()
            let sink = log
            files = TokenFiles(clock: clock, timers: clock, logger: Logger(label: "test") { _ in CapturedLog(sink: sink) })
        }

        func file(_ name: String, minValid: Double = 60, kind: TokenKind? = nil) -> TokenFile {
            TokenFile(path: sinks + "/" + name, kind: kind, minValid: minValid)
        }

        func tokens(_ id: String, expiresIn seconds: Double) -> TokenSet {
            TokenSet(refreshToken: "refresh-canary", idToken: id, idTokenExpiresAt: clock.now().addingTimeInterval(seconds))
        }

        func contents(_ name: String) -> String? {
            return FileManager.default.contents(atPath: sinks + "/" + name).map { String(decoding: $0, as: UTF8.self) }
        }

        func mode(_ path: String) -> mode_t {
            var info = stat()
            return lstat(path, &info) == 0 ? info.st_mode & 0o7777 : 0
        }
    }

    @Test func aFileHoldsExactlyTheTokenUntilMinValidBeforeItsExpiry() throws {
        let world = try World()
        defer { try? world.directory.remove() }
        let file = world.file("t", minValid: 60)
        world.files.update("work", files: [file], defaultKind: .id, tokens: world.tokens("id-1", expiresIn: 600))
        #expect(world.contents("t") == "id-1", "no newline, nothing but the token")
        #expect(world.mode(file.path) == 0o600)
        #expect(world.mode(world.sinks) == 0o700)
        world.files.update("work", files: [file], defaultKind: .id, tokens: world.tokens("id-2", expiresIn: 600))
        #expect(world.contents("t") == "id-2", "rewritten on refresh")
        world.clock.advance(by: 539)
        #expect(world.contents("t") == "id-2")
        world.clock.advance(by: 1)
        #expect(world.contents("t") == nil, "gone with min_valid left, though no refresh came")
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: world.sinks)
        #expect(leftovers.isEmpty, "no temporary file left: \(leftovers)")
    }

    @Test func noSessionNoFileAndAStaleFileIsRemoved() throws {
        let world = try World()
        defer { try? world.directory.remove() }
        let file = world.file("t")
        try FileManager.default.createDirectory(atPath: world.sinks, withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: file.path, contents: Data("dead-token".utf8)))
        world.files.update("work", files: [file], defaultKind: .id, tokens: nil)
        #expect(world.contents("t") == nil, "a file an earlier daemon left is not trusted")
        world.files.update("work", files: [file], defaultKind: .id, tokens: world.tokens("short", expiresIn: 30))
        #expect(world.contents("t") == nil, "a token with less than min_valid left is never written")
        world.files.update("work", files: [file], defaultKind: .id, tokens: world.tokens("id", expiresIn: 600))
        #expect(world.contents("t") == "id")
        world.files.update("work", files: [file], defaultKind: .id, tokens: nil)
        #expect(world.contents("t") == nil, "logout and needs_login leave no servable tokens, so no file")
    }

    /// Tokens born with less than `min_valid` to live can never fill the file: said once, with
    /// what to change, however often they are refreshed.
    @Test func tokensThatLiveLessThanMinValidAreSaidOnce() throws {
        let world = try World()
        defer { try? world.directory.remove() }
        let file = world.file("t", minValid: 300)
        for round in 0..<3 {
            var tokens = world.tokens("short-\(round)", expiresIn: 120)
            tokens.issuedAt = world.clock.now()
            world.files.update("work", files: [file], defaultKind: .id, tokens: tokens)
        }
        #expect(world.contents("t") == nil)
        let said = world.log.all.filter { $0.contains("lower min_valid") }
        #expect(said.count == 1, "\(world.log.all)")
        #expect(said.first?.contains("live 120 s") == true)
    }

    @Test func aPathPassedToAnotherAccountIsNotRemovedByTheOneThatGaveItUp() throws {
        let world = try World()
        defer { try? world.directory.remove() }
        let file = world.file("t")
        world.files.update("a", files: [file], defaultKind: .id, tokens: world.tokens("a-token", expiresIn: 600))
        world.files.update("b", files: [file], defaultKind: .id, tokens: world.tokens("b-token", expiresIn: 600))
        world.files.update("a", files: [], defaultKind: .id, tokens: world.tokens("a-token", expiresIn: 600))
        #expect(world.contents("t") == "b-token")
        world.files.update("b", files: [], defaultKind: .id, tokens: nil)
        #expect(world.contents("t") == nil, "a file no account claims any more goes")
    }

    @Test func removeAllLeavesNoFileAndWritesNoneAfter() throws {
        let world = try World()
        defer { try? world.directory.remove() }
        let file = world.file("t")
        world.files.update("work", files: [file], defaultKind: .id, tokens: world.tokens("id", expiresIn: 600))
        #expect(world.contents("t") == "id")
        world.files.removeAll()
        #expect(world.contents("t") == nil)
        world.files.update("work", files: [file], defaultKind: .id, tokens: world.tokens("later", expiresIn: 600))
        #expect(world.contents("t") == nil, "a refresh that ends after shutdown writes nothing")
    }

    @Test func aDirectoryOthersCanWriteIsRefusedAndRetriedOnceFixed() throws {
        let world = try World()
        defer { try? world.directory.remove() }
        try FileManager.default.createDirectory(atPath: world.sinks, withIntermediateDirectories: true)
        chmod(world.sinks, 0o777)
        let file = world.file("t")
        world.files.update("work", files: [file], defaultKind: .id, tokens: world.tokens("id", expiresIn: 600))
        #expect(world.contents("t") == nil)
        chmod(world.sinks, 0o700)
        world.clock.advance(by: TokenFiles.retryDelay)
        #expect(world.contents("t") == "id", "written on the retry")
    }

    @Test func aLinkPlantedAtTheFilesPathIsReplacedNotFollowed() throws {
        let world = try World()
        defer { try? world.directory.remove() }
        try FileManager.default.createDirectory(atPath: world.sinks, withIntermediateDirectories: true)
        let target = world.directory.appending("elsewhere")
        #expect(FileManager.default.createFile(atPath: target, contents: Data("untouched".utf8)))
        try FileManager.default.createSymbolicLink(atPath: world.sinks + "/t", withDestinationPath: target)
        world.files.update("work", files: [world.file("t")], defaultKind: .id, tokens: world.tokens("id", expiresIn: 600))
        #expect(world.contents("t") == "id")
        #expect(FileManager.default.contents(atPath: target) == Data("untouched".utf8))
        var info = stat()
        #expect(lstat(world.sinks + "/t", &info) == 0 && info.st_mode & S_IFMT == S_IFREG, "the link itself was replaced by the file")
    }

    /// A daemon holds its files until its socket is its own (issue 45, item 2): held, neither an
    /// account's update nor `removeAll` touches the directory; `start` writes what is due.
    @Test func heldFilesAreNeitherWrittenNorRemovedUntilStart() throws {
        let world = try World()
        defer { try? world.directory.remove() }
        try FileManager.default.createDirectory(atPath: world.sinks, withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: world.sinks + "/t", contents: Data("the running daemon's".utf8)))
        world.files.hold()
        world.files.update("work", files: [world.file("t")], defaultKind: .id, tokens: nil)
        world.files.removeAll()
        #expect(world.contents("t") == "the running daemon's")

        let started = try World()
        defer { try? started.directory.remove() }
        started.files.hold()
        started.files.update("work", files: [started.file("t")], defaultKind: .id, tokens: started.tokens("id", expiresIn: 600))
        #expect(started.contents("t") == nil)
        started.files.start(removingLeftoversIn: started.sinks, keeping: [started.file("t").path])
        #expect(started.contents("t") == "id")
    }

    /// The clean-up at start removes a write's stray temporary but never one whose write is in
    /// flight: the writer holds a lock on it until the rename (issue 45, item 2).
    @Test func theCleanUpLeavesATemporaryOfAWriteInFlight() throws {
        let world = try World()
        defer { try? world.directory.remove() }
        try FileManager.default.createDirectory(atPath: world.sinks, withIntermediateDirectories: true)
        for name in [".busy.tmp", ".stray.tmp"] {
            #expect(FileManager.default.createFile(atPath: world.sinks + "/" + name, contents: Data("half".utf8)))
        }
        let writer = open(world.sinks + "/.busy.tmp", O_WRONLY | O_CLOEXEC)
        #expect(writer >= 0 && flock(writer, LOCK_EX) == 0)
        defer { close(writer) }
        world.files.start(removingLeftoversIn: world.sinks, keeping: [])
        #expect(world.contents(".busy.tmp") == "half", "the write in flight's temporary stays")
        #expect(world.contents(".stray.tmp") == nil, "a stray one goes")
    }
}
