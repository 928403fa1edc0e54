import Testing
import TokendCore
import TokendProtocol
@testable import TokendServer

/// `[consumer.NAME]` and `[[consumer.NAME.upstream]]` (issue 49): every key read into
/// `ConsumerPolicy`, and every bad value refused with its line and key.
@Suite struct ConsumerConfigurationTests {
    static let accounts = """
        [account.work]
        provider = "firebase"
        api_key = "AIza"

        [account.home]
        provider = "firebase"
        api_key = "AIzb"

        """
    let environment = ["XDG_RUNTIME_DIR": "/run/user/1000"]

    func parse(_ consumers: String) throws(ConfigurationError) -> Configuration {
        try Configuration.parse(Self.accounts + consumers, path: "/c.toml", environment: environment)
    }

    /// The line number of the first line of `consumers` that contains `needle`, counted in the whole file.
    func line(of needle: String, in consumers: String) -> Int? {
        let lines = (Self.accounts + consumers).split(separator: "\n", omittingEmptySubsequences: false)
        return lines.firstIndex { $0.contains(needle) }.map { $0 + 1 }
    }

    @Test func everyKey() throws {
        let configuration = try parse("""
            [consumer.build]
            socket = "build.sock"
            accounts = ["work"]
            kinds = ["access"]
            audiences = ["https://api.example.com"]
            scopes = ["read", "write"]
            max_min_valid = "5m"
            operations = ["token", "status", "watch"]
            unit = "app-build.scope"
            proxy = "127.0.0.1:8181"

            [[consumer.build.upstream]]
            url = "https://api.example.com"
            ca = "/etc/ssl/example.pem"
            account = "work"
            kind = "access"
            audience = "https://api.example.com"
            scopes = ["read"]

            [[consumer.build.upstream]]
            url = "http://127.0.0.1:9000/"
            account = "work"
            audience = "https://api.example.com"
            scopes = ["write"]
            """)
        let build = try #require(configuration.consumers["build"])
        #expect(build.socket == "/run/user/1000/tokend/consumers/build.sock")
        #expect(build.accounts == ["work"])
        #expect(build.kinds == [.access])
        #expect(build.audiences == ["https://api.example.com"])
        #expect(build.scopes == ["read", "write"])
        #expect(build.maxMinValid == 300)
        #expect(build.operations == [.token, .status, .list, .watch])
        #expect(build.unit == "app-build.scope")
        #expect(build.proxy == "127.0.0.1:8181")
        #expect(build.proxyAddress == .tcp(host: "127.0.0.1", port: 8181))
        #expect(build.upstreams.count == 2)
        #expect(build.upstreams[0].url == "https://api.example.com")
        #expect(build.upstreams[0].scheme == "https" && build.upstreams[0].host == "api.example.com" && build.upstreams[0].port == 443)
        #expect(build.upstreams[0].ca == "/etc/ssl/example.pem")
        #expect(build.upstreams[0].account == "work" && build.upstreams[0].kind == .access)
        #expect(build.upstreams[0].audience == "https://api.example.com" && build.upstreams[0].scopes == ["read"])
        #expect(build.upstreams[1].scheme == "http" && build.upstreams[1].host == "127.0.0.1" && build.upstreams[1].port == 9000)
        #expect(build.upstreams[1].kind == nil && build.upstreams[1].ca == nil)
    }

    @Test func defaults() throws {
        let configuration = try parse("""
            [consumer.agent]
            socket = "/tmp/agent.sock"
            accounts = ["home", "work", "home"]
            """)
        let agent = try #require(configuration.consumers["agent"])
        #expect(agent.socket == "/tmp/agent.sock")
        #expect(agent.accounts == ["home", "work"])
        #expect(agent.operations == ConsumerPolicy.defaultOperations)
        #expect(agent.allows(.hello) && agent.allows(.token) && agent.allows(.list) && !agent.allows(.login) && !agent.allows(.watch))
        #expect(agent.kinds == nil && agent.audiences == nil && agent.scopes == nil && agent.maxMinValid == nil && agent.unit == nil)
        #expect(agent.proxy == nil && agent.upstreams.isEmpty)
        #expect(try parse("").consumers.isEmpty)
    }

    @Test func proxyAddresses() throws {
        for (text, address) in [
            ("[::1]:8080", ProxyAddress.tcp(host: "::1", port: 8080)), ("localhost:1", .tcp(host: "localhost", port: 1)),
            ("/run/user/1000/proxy.sock", .unix(path: "/run/user/1000/proxy.sock")),
        ] {
            let configuration = try parse("""
                [consumer.p]
                accounts = ["work"]
                proxy = "\(text)"
                [[consumer.p.upstream]]
                url = "https://api.example.com:8443"
                account = "work"
                """)
            #expect(configuration.consumers["p"]?.proxyAddress == address)
            #expect(configuration.consumers["p"]?.upstreams.first?.port == 8443)
        }
    }

    /// Each bad value: its key and line in the error, and words that say what is allowed.
    @Test(arguments: [
        ("accounts = [\"work\"]\nsocket = 5", "socket", "must be a string"),
        ("socket = \"s.sock\"", "accounts", "is required"),
        ("socket = \"s.sock\"\naccounts = []", "accounts", "is required"),
        ("socket = \"s.sock\"\naccounts = [\"nobody\"]", "accounts", "\"nobody\" is not an account"),
        ("socket = \"s.sock\"\naccounts = [\"work\", 3]", "accounts", "must be an array"),
        ("accounts = [\"work\"]", "accounts", "needs a socket"),
        ("socket = \"../s.sock\"\naccounts = [\"work\"]", "socket", "absolute path"),
        ("socket = \"/a/../s.sock\"\naccounts = [\"work\"]", "socket", "absolute path"),
        ("socket = \"/\(String(repeating: "x", count: 120))\"\naccounts = [\"work\"]", "socket", "longer than 107"),
        ("socket = \"s.sock\"\naccounts = [\"work\"]\nkinds = [\"refresh\"]", "kinds", "\"refresh\""),
        ("socket = \"s.sock\"\naccounts = [\"work\"]\nkinds = []", "kinds", "at least one"),
        ("socket = \"s.sock\"\naccounts = [\"work\"]\naudiences = [\"a b\"]", "audiences", "is not one of"),
        ("socket = \"s.sock\"\naccounts = [\"work\"]\naudiences = []", "audiences", "at least one"),
        ("socket = \"s.sock\"\naccounts = [\"work\"]\nscopes = [\"a\\\"b\"]", "scopes", "is not one of"),
        ("socket = \"s.sock\"\naccounts = [\"work\"]\nscopes = [\"a b\"]", "scopes", "is not one of"),
        ("socket = \"s.sock\"\naccounts = [\"work\"]\nmax_min_valid = \"30s\"", "max_min_valid", "from 60s to 24h"),
        ("socket = \"s.sock\"\naccounts = [\"work\"]\nmax_min_valid = \"2d\"", "max_min_valid", "from 60s to 24h"),
        ("socket = \"s.sock\"\naccounts = [\"work\"]\nmax_min_valid = 99999999999", "max_min_valid", "from 60s to 24h"),
        ("socket = \"s.sock\"\naccounts = [\"work\"]\nmax_min_valid = \"soon\"", "max_min_valid", "like \"5m\""),
        ("socket = \"s.sock\"\naccounts = [\"work\"]\noperations = [\"delete\"]", "operations", "\"delete\" is not an operation"),
        ("socket = \"s.sock\"\naccounts = [\"work\"]\noperations = [\"hello\"]", "operations", "is not an operation"),
        ("socket = \"s.sock\"\naccounts = [\"work\"]\nunit = \"app build\"", "unit", "systemd unit name"),
        ("socket = \"s.sock\"\naccounts = [\"work\"]\nunit = \"app\"", "unit", "systemd unit name"),
        ("socket = \"s.sock\"\naccounts = [\"work\"]\ncolour = \"red\"", "colour", "unknown key for a consumer"),
        ("accounts = [\"work\"]\nproxy = \"0.0.0.0:8080\"", "proxy", "loopback address"),
        ("accounts = [\"work\"]\nproxy = \"192.168.1.2:8080\"", "proxy", "loopback address"),
        ("accounts = [\"work\"]\nproxy = \"127.0.0.1:0\"", "proxy", "loopback address"),
        ("accounts = [\"work\"]\nproxy = \"127.0.0.1:65536\"", "proxy", "loopback address"),
        ("accounts = [\"work\"]\nproxy = \"127.0.0.1\"", "proxy", "loopback address"),
        ("accounts = [\"work\"]\nproxy = \"127.0.0.1:8080\"", "proxy", "needs at least one"),
    ])
    func refusals(table: String, key: String, words: String) throws {
        let text = "[consumer.c]\n" + table + "\n"
        let error = try #require(throws: ConfigurationError.self) { try parse(text) }
        #expect(error.key == "consumer.c.\(key)", "\(error)")
        #expect(error.message.contains(words), "\(error)")
        let expectedLine = line(of: "\(key) =", in: text) ?? line(of: "[consumer.c]", in: text)
        #expect(error.line == expectedLine, "\(error)")
    }

    @Test(arguments: [
        ("url = \"ftp://api.example.com\"\naccount = \"work\"", "url", "must be an origin"),
        ("url = \"https://api.example.com/v1\"\naccount = \"work\"", "url", "no path"),
        ("url = \"https://user@api.example.com\"\naccount = \"work\"", "url", "no path, user"),
        ("url = \"https://api.example.com?x=1\"\naccount = \"work\"", "url", "must be an origin"),
        ("url = \"https://api.example.com:99999\"\naccount = \"work\"", "url", "must be an origin"),
        ("url = \"http://api.example.com\"\naccount = \"work\"", "url", "only a loopback host"),
        ("url = \"http://127.0.0.2.example.com\"\naccount = \"work\"", "url", "only a loopback host"),
        ("account = \"work\"", "url", "is required"),
        ("url = \"https://api.example.com\"", "account", "is required"),
        ("url = \"https://api.example.com\"\naccount = \"home\"", "account", "is not in this consumer's accounts"),
        ("url = \"https://api.example.com\"\naccount = \"work\"\nkind = \"both\"", "kind", "\"id\" or \"access\""),
        ("url = \"https://api.example.com\"\naccount = \"work\"\nca = \"cert.pem\"", "ca", "absolute path"),
        ("url = \"https://api.example.com\"\naccount = \"work\"\naudience = \"a b\"", "audience", "without spaces"),
        ("url = \"https://api.example.com\"\naccount = \"work\"\nscopes = []", "scopes", "non-empty array"),
        ("url = \"https://api.example.com\"\naccount = \"work\"\nheader = \"X\"", "header", "unknown key for an upstream"),
    ])
    func upstreamRefusals(entry: String, key: String, words: String) throws {
        let text = "[consumer.c]\naccounts = [\"work\"]\nproxy = \"127.0.0.1:8080\"\n\n[[consumer.c.upstream]]\nurl = \"https://ok.example.com\"\naccount = \"work\"\n\n[[consumer.c.upstream]]\n" + entry + "\n"
        let error = try #require(throws: ConfigurationError.self) { try parse(text) }
        #expect(error.key == "consumer.c.upstream[2].\(key)", "\(error)")
        #expect(error.message.contains(words), "\(error)")
        // The second entry's own line for the key, else its header's.
        let lines = (Self.accounts + text).split(separator: "\n", omittingEmptySubsequences: false)
        let header = lines.indices.filter { lines[$0] == "[[consumer.c.upstream]]" }[1]
        let keyLine = lines.indices.first { $0 > header && lines[$0].hasPrefix("\(key) =") }
        #expect(error.line == (keyLine ?? header) + 1, "\(error)")
    }

    /// What the consumer itself narrows, each upstream must stay inside; two of one origin, and
    /// an upstream without a proxy, are refused.
    @Test func upstreamsStayInsideThePolicy() throws {
        let base = "[consumer.c]\naccounts = [\"work\"]\nkinds = [\"id\"]\naudiences = [\"aud\"]\nscopes = [\"read\"]\nproxy = \"127.0.0.1:8080\"\n[[consumer.c.upstream]]\nurl = \"https://a.example.com\"\naccount = \"work\"\n"
        for (extra, words) in [
            ("audience = \"aud\"\nscopes = [\"read\"]\nkind = \"access\"", "is not in this consumer's kinds"),
            ("audience = \"other\"\nscopes = [\"read\"]", "is not in this consumer's audiences"),
            ("scopes = [\"read\"]", "only its audiences"),
            ("audience = \"aud\"", "only its scopes"),
            ("audience = \"aud\"\nscopes = [\"write\"]", "is not in this consumer's scopes"),
        ] {
            let error = try #require(throws: ConfigurationError.self) { try parse(base + extra + "\n") }
            #expect(error.message.contains(words), "\(error)")
        }
        let twice = "[consumer.c]\naccounts = [\"work\"]\nproxy = \"127.0.0.1:8080\"\n[[consumer.c.upstream]]\nurl = \"https://a.example.com\"\naccount = \"work\"\n[[consumer.c.upstream]]\nurl = \"https://A.example.com:443/\"\naccount = \"work\"\n"
        #expect(throws: ConfigurationError.self) { try parse(twice) }
        let noProxy = "[consumer.c]\nsocket = \"c.sock\"\naccounts = [\"work\"]\n[[consumer.c.upstream]]\nurl = \"https://a.example.com\"\naccount = \"work\"\n"
        let error = try #require(throws: ConfigurationError.self) { try parse(noProxy) }
        #expect(error.message.contains("needs the consumer's proxy"), "\(error)")
    }

    @Test func namesAndSharedSockets() throws {
        let badName = try #require(throws: ConfigurationError.self) { try parse("[consumer.\"a b\"]\nsocket = \"s\"\naccounts = [\"work\"]\n") }
        #expect(badName.message.contains("consumer names use letters"))
        let shared = try #require(throws: ConfigurationError.self) {
            try parse("[consumer.a]\nsocket = \"s.sock\"\naccounts = [\"work\"]\n[consumer.b]\nsocket = \"/run/user/1000/tokend/consumers/s.sock\"\naccounts = [\"home\"]\n")
        }
        #expect(shared.key == "consumer.b.socket" && shared.message.contains("already the socket of consumer a"), "\(shared)")
        let noRuntime = try #require(throws: ConfigurationError.self) {
            try Configuration.parse(Self.accounts + "[consumer.a]\nsocket = \"s.sock\"\naccounts = [\"work\"]\n", path: "/c.toml", environment: [:])
        }
        #expect(noRuntime.message.contains("XDG_RUNTIME_DIR"))
        // No accounts at all: the consumer's account is still checked, not skipped.
        let alone = try #require(throws: ConfigurationError.self) {
            try Configuration.parse("[consumer.a]\nsocket = \"/tmp/a.sock\"\naccounts = [\"work\"]\n", path: "/c.toml", environment: [:])
        }
        #expect(alone.message.contains("\"work\" is not an account"))
    }
}
