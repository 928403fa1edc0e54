import ArgumentParser
import Testing

@testable import TokenctlKit

@Suite("Command-line parsing")
struct ParsingTests {
    @Test func tokenWithEveryOption() throws {
        let parsed = try Tokenctl.parseAsRoot(["token", "work", "--min-valid", "300", "--kind", "access", "--socket", "/tmp/s", "--timeout", "5"])
        let command = try #require(parsed as? Tokenctl.Token)
        #expect(command.token.account == "work")
        #expect(command.token.minValid == 300)
        #expect(command.token.kind == .access)
        #expect(command.token.connection.socket == "/tmp/s")
        #expect(command.token.connection.timeout == 5)
    }

    @Test func tokenDefaultsLeaveTheChoiceToTheDaemon() throws {
        let command = try #require(try Tokenctl.parseAsRoot(["token", "work"]) as? Tokenctl.Token)
        #expect(command.token.minValid == nil)
        #expect(command.token.kind == nil)
        #expect(command.token.connection.socket == nil)
        #expect(command.token.connection.timeout == ConnectionOptions.defaultTimeout)
        #expect(command.token.connection.settings.readTimeout > command.token.connection.timeout)
    }

    @Test func status() throws {
        let all = try #require(try Tokenctl.parseAsRoot(["status"]) as? Tokenctl.Status)
        #expect(all.account == nil)
        #expect(!all.json)
        let one = try #require(try Tokenctl.parseAsRoot(["status", "work", "--json"]) as? Tokenctl.Status)
        #expect(one.account == "work")
        #expect(one.json)
    }

    @Test func accountCommands() throws {
        #expect(try (Tokenctl.parseAsRoot(["refresh", "work"]) as? Tokenctl.Refresh)?.account == "work")
        #expect(try (Tokenctl.parseAsRoot(["import", "work"]) as? Tokenctl.Import)?.account == "work")
        #expect(try (Tokenctl.parseAsRoot(["logout", "work"]) as? Tokenctl.Logout)?.account == "work")
        #expect(try Tokenctl.parseAsRoot(["list", "--socket", "/tmp/s"]) is Tokenctl.List)
    }

    @Test func storeMove() throws {
        let some = try #require(try Tokenctl.parseAsRoot(["store", "move", "work", "home", "--to", "tpm2"]) as? Tokenctl.Store.Move)
        #expect(some.accounts == ["work", "home"] && !some.all && some.to == "tpm2")
        let all = try #require(try Tokenctl.parseAsRoot(["store", "move", "--all", "--to", "pass"]) as? Tokenctl.Store.Move)
        #expect(all.accounts.isEmpty && all.all && all.to == "pass")
        // Usage errors (64): an unknown store, neither accounts nor --all, both.
        for wrong in [["store", "move", "work", "--to", "floppy"], ["store", "move", "--to", "tpm2"], ["store", "move", "work", "--all", "--to", "tpm2"], ["store", "move", "work"]] {
            #expect(throws: (any Error).self, "\(wrong)") { try Tokenctl.parseAsRoot(wrong) }
        }
    }

    @Test func watch() throws {
        #expect(try (Tokenctl.parseAsRoot(["watch"]) as? Tokenctl.Watch)?.account == nil)
        #expect(try (Tokenctl.parseAsRoot(["watch", "work"]) as? Tokenctl.Watch)?.account == "work")
    }

    @Test(arguments: ["token", "status", "list", "refresh", "import", "logout", "watch", "reload"])
    func everySubcommandTakesTheConnectionOptions(_ name: String) throws {
        let account = ["status", "list", "watch", "reload"].contains(name) ? [] : ["work"]
        let parsed = try Tokenctl.parseAsRoot([name] + account + ["--socket", "/tmp/x.sock", "--timeout", "2.5"])
        let options = try #require((parsed as? any HasConnection)?.connection)
        #expect(options.socket == "/tmp/x.sock")
        #expect(options.timeout == 2.5)
    }

    @Test(arguments: [
        ["token"], ["refresh"], ["import"], ["logout"],  // missing account
        ["token", ""],  // empty account
        ["token", "work", "--kind", "refresh"],  // bad --kind
        ["token", "work", "--min-valid=-5"],  // negative --min-valid
        ["token", "work", "--min-valid", "-5"],  // looks like an option: missing value
        ["token", "work", "--min-valid", "soon"],
        ["list", "--timeout", "0"],
        ["token", "work", "--refresh-token", "x"],  // tokens never come in argv
        ["token", "work", "extra"],
        ["frobnicate"],
    ])
    func usageErrorsExit64WithOneLine(_ arguments: [String]) {
        #expect(throws: (any Error).self) { try Tokenctl.parseAsRoot(arguments) }
        let console = CapturingConsole()
        #expect(runTokenctl(arguments, console: console) == 64)
        #expect(console.stdout.isEmpty)
        #expect(console.stderr.hasPrefix("tokenctl: "))
        #expect(console.stderr.filter { $0 == "\n" }.count == 1)
        #expect(console.stderr.contains("; see: tokenctl"))
    }

    @Test func usageErrorPointsAtTheSubcommandsHelp() {
        let console = CapturingConsole()
        _ = runTokenctl(["token", "work", "--kind", "refresh"], console: console)
        #expect(console.stderr.hasSuffix("; see: tokenctl token --help\n"))
        #expect(console.stderr.contains("'refresh'"))
    }

    @Test(arguments: [["--help"], ["token", "--help"], ["help", "status"], []])
    func helpGoesToStdoutWithStatus0(_ arguments: [String]) {
        let console = CapturingConsole()
        #expect(runTokenctl(arguments, console: console) == 0)
        #expect(console.stdout.contains("USAGE: tokenctl"))
        #expect(console.stderr.isEmpty)
    }

    @Test func subcommandHelpIsTheSubcommands() {
        let console = CapturingConsole()
        _ = runTokenctl(["token", "--help"], console: console)
        #expect(console.stdout.contains("--min-valid <seconds>"))
    }
}

/// Lets the parameterized test above read each subcommand's options without a switch.
protocol HasConnection { var connection: ConnectionOptions { get } }
extension Tokenctl.Token: HasConnection { var connection: ConnectionOptions { token.connection } }
extension Tokenctl.Header: HasConnection { var connection: ConnectionOptions { token.connection } }
extension Tokenctl.Exec: HasConnection { var connection: ConnectionOptions { token.connection } }
extension Tokenctl.ExecCredential: HasConnection { var connection: ConnectionOptions { token.connection } }
extension Tokenctl.GitCredential: HasConnection {}
extension Tokenctl.Status: HasConnection {}
extension Tokenctl.List: HasConnection {}
extension Tokenctl.Refresh: HasConnection {}
extension Tokenctl.Reload: HasConnection {}
extension Tokenctl.Import: HasConnection {}
extension Tokenctl.Logout: HasConnection {}
extension Tokenctl.Watch: HasConnection {}
