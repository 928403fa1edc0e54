import Foundation
import Testing
import TokendCore
import TokendProtocol
import TokendFakes
import TokendTestSupport

/// What the docs promise other programs: the protocol document's Python and socat examples run
/// as written, bash completion loads and completes account names, `man -l` renders the page.
@Suite struct ClientExampleTests {

    /// The code block right after `<!-- tested example: LANGUAGE -->` in docs/protocol.md.
    static func example(_ language: String) throws -> String {
        let text = try String(contentsOf: Repository.root.appendingPathComponent("docs/protocol.md"), encoding: .utf8)
        guard let marker = text.range(of: "<!-- tested example: \(language) -->"),
            let open = text.range(of: "```\(language)\n", range: marker.upperBound..<text.endIndex),
            let close = text.range(of: "\n```", range: open.upperBound..<text.endIndex)
        else { throw HarnessError("docs/protocol.md has no tested \(language) example") }
        return String(text[open.upperBound..<close.lowerBound]) + "\n"
    }

    @Test func theProtocolDocumentsPythonAndSocatExamplesPrintTheToken() async throws {
        try await withWorld { world in
            try await world.importNewUser()
            let expected = try await world.tokenctl(["token", "work"]).stdout
            let python = try await runChild("/usr/bin/python3", ["-I", "-c", try Self.example("python")], environment: world.environment)
            #expect(python.status == 0, "\(python.stderr)")
            #expect(python.stdout == expected)
            let shell = try await runChild("/bin/sh", ["-c", try Self.example("sh")], environment: world.environment)
            #expect(shell.status == 0, "\(shell.stderr)")
            #expect(shell.stdout == expected)
            // Both say what went wrong rather than printing an empty token.
            #expect(try await world.tokenctl(["logout", "work"]).status == 0)
            let failing = try await runChild("/bin/sh", ["-c", try Self.example("sh")], environment: world.environment)
            #expect(failing.status == 1 && failing.stdout.isEmpty && failing.stderr.contains("needs_login"))
            let failingPython = try await runChild("/usr/bin/python3", ["-I", "-c", try Self.example("python")], environment: world.environment)
            #expect(failingPython.status != 0 && failingPython.stdout.isEmpty && failingPython.stderr.contains("needs_login"))
        }
    }

    @Test func bashCompletionLoadsAndCompletesAccountNamesFromTheDaemon() async throws {
        try await withWorld(accounts: ["work", "home"]) { world in
            let directory = try TemporaryDirectory()
            defer { try? directory.remove() }
            let script = directory.appending("tokenctl.bash")
            let generated = try await runChild(IntegrationTests.tokenctlPath, ["--generate-completion-script", "bash"], environment: world.environment)
            #expect(generated.status == 0)
            try generated.stdout.write(toFile: script, atomically: true, encoding: .utf8)
            var environment = world.environment
            environment["PATH"] = DaemonHarness.binDirectory + ":" + (environment["PATH"] ?? "/usr/bin:/bin")
            let loaded = try await runChild("/bin/bash", ["--norc", "-c", "source '\(script)' && complete -p tokenctl"], environment: environment)
            #expect(loaded.status == 0, "\(loaded.stderr)")
            #expect(loaded.stdout.contains("tokenctl"), "\(loaded.stdout)")
            // What bash does on `tokenctl token <Tab>` and `tokenctl ex<Tab>`.
            let complete = """
                source '\(script)'
                function_name=$(complete -p tokenctl | sed -n 's/.*-F \\([^ ]*\\).*/\\1/p')
                complete_line() { COMP_LINE="$1"; COMP_POINT=${#COMP_LINE}; read -r -a COMP_WORDS <<< "$1"
                  [ "${1: -1}" = " " ] && COMP_WORDS+=(""); COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
                  COMPREPLY=(); "$function_name" tokenctl "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"; printf '%s\\n' "${COMPREPLY[@]}"; }
                echo "accounts:"; complete_line "tokenctl token "
                echo "subcommands:"; complete_line "tokenctl exec-"
                """
            let completed = try await runChild("/bin/bash", ["--norc", "-c", complete], environment: environment)
            #expect(completed.status == 0, "\(completed.stderr)")
            let lines = completed.stdout.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
            let accounts = lines.drop { $0 != "accounts:" }.dropFirst().prefix { $0 != "subcommands:" }
            #expect(Set(accounts) == ["home", "work"], "\(completed.stdout) \(completed.stderr)")
            #expect(lines.contains("exec-credential"), "\(completed.stdout)")
        }
    }

    /// scripts/test generates completions and the page where scripts/install does, into here.
    static var docsDirectory: String {
        ProcessInfo.processInfo.environment["TOKEND_DOCS_DIR"] ?? DaemonHarness.binDirectory + "/tokenctl-docs"
    }

    @Test func theManPageRendersWithEveryCommand() async throws {
        let page = Self.docsDirectory + "/tokenctl.1"
        #expect(FileManager.default.fileExists(atPath: page), "scripts/test generates \(page) (scripts/lib/tokenctl-docs.sh)")
        var environment = ProcessInfo.processInfo.environment
        environment["MANPAGER"] = "cat"
        environment["MANWIDTH"] = "120"
        let run = try await runChild("/usr/bin/man", ["-l", page], environment: environment)
        #expect(run.status == 0, "\(run.stderr)")
        // Overstrike bold (X\bX) is how man marks text off a terminal: read through it.
        let text = run.stdout.replacing(/.\u{08}/, with: "")
        for command in ["token", "status", "exec", "header", "exec-credential", "git-credential", "watch", "--min-valid"] {
            #expect(text.contains(command), "\(command) missing from the rendered page")
        }
    }

    /// `watch` into a pipe: JSON lines, keyring moods included, never a token; on a terminal
    /// (a pty from script(1)): readable lines.
    @Test func watchShowsKeyringMoodsAndNeverATokenAsJSONOrReadable() async throws {
        var options = FakeFirebase.Options()
        options.rotate = true
        try await withWorld(options: options) { world in
            try await world.importNewUser()
            let directory = try TemporaryDirectory()
            defer { try? directory.remove() }
            let piped = directory.appending("piped")
            let terminal = directory.appending("terminal")
            let watcher = try ChildProcess.start(IntegrationTests.tokenctlPath, ["watch"], environment: world.environment, output: piped)
            defer { ChildProcess.stop(watcher) }
            var scriptEnvironment = world.environment
            scriptEnvironment["TOKENCTL"] = IntegrationTests.tokenctlPath
            let readable = try ChildProcess.start("/usr/bin/script", ["-qfec", "\"$TOKENCTL\" watch work", terminal], environment: scriptEnvironment)
            defer { ChildProcess.stop(readable) }
            func text(_ path: String) -> String { (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }
            // Both watchers are subscribed once a forced refresh shows up in them.
            try await poll("both watchers see a refresh") {
                _ = try await world.tokenctl(["refresh", "work"])
                return text(piped).contains(#""event":"refreshed""#) && text(terminal).contains("  work  refreshed  expires ")
            }
            try world.keyring.lock()
            #expect(try await world.tokenctl(["refresh", "work"]).status == 0)
            try await poll("keyring_locked") { text(piped).contains(#""event":"keyring_locked""#) }
            try world.keyring.unlock()
            try await poll("keyring_unlocked") { text(piped).contains(#""event":"keyring_unlocked""#) }
            let token = try await world.tokenctl(["token", "work"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            for line in text(piped).split(separator: "\n") {
                #expect(line.hasPrefix("{") && line.hasSuffix("}"), "a JSON line: \(line)")
            }
            #expect(!text(piped).contains(token) && !text(terminal).contains(token))
            #expect(!text(terminal).contains("{"), "readable, not JSON, on a terminal")
        }
    }

    @Test func versionMatchesTheDaemons() async throws {
        try await withWorld(accounts: []) { world in
            let run = try await world.tokenctl(["--version"])
            #expect(run.status == 0)
            let hello = try await world.call(.hello)
            #expect(run.stdout == (hello.version ?? "?") + "\n")
        }
    }
}
