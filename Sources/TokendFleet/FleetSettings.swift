/// The `[fleet]` table as plain values (README, "A fleet"); the daemon's configuration reads it.
public struct FleetSettings: Sendable, Equatable {
    /// `https://HOST:PORT` of etcd members' client URLs, tried in order and failed over.
    public var endpoints: [String]
    /// PEM files: the CA that signed the members' certificates, and this member's client
    /// certificate and key (etcd's `--client-cert-auth`).
    public var ca: String
    public var cert: String
    public var key: String
    /// The etcd user and the file holding its password: etcd 3.4's JSON gateway does not take a
    /// client certificate's CN as the user (etcd PR #10366), so the gateway authenticates by name.
    public var user: String?
    public var passwordFile: String?
    /// Where every key tokend writes lives; an etcd role limited to it is all tokend needs.
    public var prefix: String
    /// The file holding the fleet's 32-byte AES key, base64 (or `credential:NAME`, a systemd
    /// credential in `$CREDENTIALS_DIRECTORY`).
    public var sealingKey: String
    /// The election lease's TTL, seconds.
    public var lease: Double

    public static let defaultPrefix = "/tokend/"
    public static let defaultLease: Double = 10
    /// etcd's own minimum TTL is 5 s (its `minLeaseTTL` at the default election timeout); an
    /// hour is far past any sensible failover time.
    public static let leaseRange: ClosedRange<Double> = 5...3600

    public init(
        endpoints: [String], ca: String, cert: String, key: String, user: String? = nil, passwordFile: String? = nil,
        prefix: String = defaultPrefix, sealingKey: String, lease: Double = defaultLease
    ) {
        self.endpoints = endpoints
        self.ca = ca
        self.cert = cert
        self.key = key
        self.user = user
        self.passwordFile = passwordFile
        self.prefix = prefix
        self.sealingKey = sealingKey
        self.lease = lease
    }

    /// How long before the lease can expire at the server the holder stops refreshing: covers
    /// the rate difference of two clocks (NTP slews at most 500 ppm) and etcd's expiry check,
    /// with a whole second at least.
    public var leaseMargin: Double { max(1, lease / 10) }
}
