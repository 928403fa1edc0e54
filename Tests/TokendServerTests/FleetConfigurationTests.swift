import Testing
import TokendFleet
@testable import TokendServer

/// `[fleet]` and an account's `fleet` (README, "A fleet"): what is taken, what is refused and why.
@Suite struct FleetConfigurationTests {
    func parse(_ text: String) throws(ConfigurationError) -> Configuration {
        try Configuration.parse(text, path: "/c.toml", environment: [:])
    }

    static let fleet = """
        [fleet]
        endpoints = ["https://127.0.0.1:2379", "https://etcd2.example.com:2379"]
        ca = "/etc/tokend/ca.pem"
        cert = "/etc/tokend/member.pem"
        key = "/etc/tokend/member-key.pem"
        user = "tokend"
        password_file = "/etc/tokend/etcd-password"
        sealing_key = "/etc/tokend/fleet.key"

        """

    static let account = """
        [account.bot]
        provider = "firebase"
        api_key = "AIza"
        fleet = true

        [account.mine]
        provider = "firebase"
        api_key = "AIza"
        """

    @Test func aFleetAndItsAccounts() throws {
        let configuration = try parse(Self.fleet + Self.account)
        #expect(configuration.fleet == FleetSettings(
            endpoints: ["https://127.0.0.1:2379", "https://etcd2.example.com:2379"], ca: "/etc/tokend/ca.pem", cert: "/etc/tokend/member.pem",
            key: "/etc/tokend/member-key.pem", user: "tokend", passwordFile: "/etc/tokend/etcd-password", sealingKey: "/etc/tokend/fleet.key"))
        #expect(configuration.fleet?.prefix == "/tokend/")
        #expect(configuration.fleet?.lease == 10)
        #expect(configuration.accounts["bot"]?.fleet == true)
        #expect(configuration.accounts["mine"]?.fleet == false)
    }

    @Test func prefixAndLease() throws {
        let configuration = try parse(Self.fleet.replacingOccurrences(of: "[fleet]\n", with: "[fleet]\nprefix = \"/team/tokend/\"\nlease = \"30s\"\n"))
        #expect(configuration.fleet?.prefix == "/team/tokend/")
        #expect(configuration.fleet?.lease == 30)
    }

    /// Each refusal names the key and says what is wanted.
    @Test(arguments: [
        ("endpoints = [\"http://127.0.0.1:2379\"]", "fleet.endpoints", "https only"),
        ("endpoints = []", "fleet.endpoints", "non-empty"),
        ("lease = \"2s\"", "fleet.lease", "from 5s"),
        ("prefix = \"tokend\"", "fleet.prefix", "starts and ends"),
        ("prefix = \"/a/../b/\"", "fleet.prefix", "starts and ends"),
        ("colour = \"blue\"", "fleet.colour", "unknown key"),
    ])
    func refusals(line: String, key: String, words: String) throws {
        let key0 = line.split(separator: " ").first.map(String.init) ?? ""
        var text = Self.fleet.split(separator: "\n").filter { !$0.hasPrefix(key0 + " ") }.joined(separator: "\n")
        text = text.replacingOccurrences(of: "[fleet]", with: "[fleet]\n" + line) + "\n"
        let error = #expect(throws: ConfigurationError.self) { try parse(text) }
        #expect(error?.key == key)
        #expect(error?.message.contains(words) == true, "\(error?.message ?? "")")
    }

    @Test func aFleetAccountNeedsAFleet() throws {
        let error = #expect(throws: ConfigurationError.self) { try parse(Self.account) }
        #expect(error?.key == "account.bot.fleet")
        #expect(error?.message.contains("[fleet]") == true)
    }

    @Test func userAndPasswordFileGoTogether() throws {
        let text = Self.fleet.split(separator: "\n").filter { !$0.hasPrefix("password_file") }.joined(separator: "\n") + "\n"
        let error = #expect(throws: ConfigurationError.self) { try parse(text) }
        #expect(error?.key == "fleet.user")  // the key that is there, on its line
        #expect(error?.message.contains("password_file") == true)
    }

    /// Without `[fleet]` nothing changes: no fleet, no account in one.
    @Test func noFleet() throws {
        let configuration = try parse("[account.mine]\nprovider = \"firebase\"\napi_key = \"AIza\"\n")
        #expect(configuration.fleet == nil)
        #expect(configuration.accounts["mine"]?.fleet == false)
    }
}
