import TokendCore
import TokendProtocol

/// `[consumer.NAME]` (README, "Consumers"; issue 49): a client with fewer rights than the main
/// socket's — a container, a sandbox, an agent. It reaches tokend through a socket of its own
/// and/or a proxy, and may use only what its policy names. Plain values, checked when the file
/// is read (Configuration+Consumers.swift); the socket's gate (Connections/ConsumerGate.swift)
/// and the proxy apply them.
public struct ConsumerPolicy: Sendable, Equatable {
    public var name: String
    /// The consumer's socket, resolved to an absolute path; nil for a consumer served only by its proxy.
    public var socket: String?
    /// The accounts it may use, sorted. Every other account does not exist for it.
    public var accounts: [String]
    /// The token kinds it may ask for; nil: any.
    public var kinds: Set<TokenKind>?
    /// The audiences it may ask for; nil: no rule. When set, every token it gets names one of them.
    public var audiences: [String]?
    /// The scopes it may ask for; nil: no rule. When set, every token it gets is narrowed to some of them.
    public var scopes: [String]?
    /// The ceiling on a request's `min_valid`, in seconds; nil: the protocol's own bound.
    public var maxMinValid: Double?
    /// The ops it may send besides `hello` (always allowed: it says what the socket serves).
    /// `status` and `list` answer alike, so one allows the other.
    public var operations: Set<Op>
    /// A systemd unit (`app-build.scope`) its peers must run in, checked at accept from
    /// /proc/PID/cgroup; nil: any process of the user that can reach the socket.
    public var unit: String?
    /// `proxy` as written: `"127.0.0.1:PORT"` (a loopback address) or a Unix socket path.
    /// Served by the proxy (item 3, not this file); `proxyAddress` is its parsed form.
    public var proxy: String?
    /// `proxy`, parsed and checked.
    public var proxyAddress: ProxyAddress?
    /// `[[consumer.NAME.upstream]]`: the origins the proxy adds a token for, in file order.
    public var upstreams: [ConsumerUpstream] = []

    /// `operations` when the table names none: its own accounts' tokens and state, nothing that
    /// changes a session or watches one (issue 49, item 1).
    public static let defaultOperations: Set<Op> = [.token, .status, .list]

    public init(name: String, socket: String? = nil, accounts: [String], operations: Set<Op> = defaultOperations) {
        self.name = name
        self.socket = socket
        self.accounts = accounts.sorted()
        self.operations = operations
    }

    /// Whether `op` is this consumer's to send.
    public func allows(_ op: Op) -> Bool {
        op == .hello || operations.contains(op)
    }

    /// The operations as the config writes them, for messages: sorted, `list` folded into `status`.
    public var operationNames: [String] {
        operations.filter { $0 != .list }.map(\.rawValue).sorted()
    }
}

/// One `[[consumer.NAME.upstream]]`: an origin the consumer's proxy connects to itself, adding
/// `Authorization: Bearer` with the named account's token.
public struct ConsumerUpstream: Sendable, Equatable {
    /// `url` as written (an origin: scheme, host, optional port, nothing after).
    public var url: String
    /// `https` or `http` (the latter only to a loopback host).
    public var scheme: String
    /// The host, lowercased; an IPv6 literal without its brackets.
    public var host: String
    /// The port, explicit or the scheme's default.
    public var port: Int
    /// `ca`: a PEM file of the roots to trust for this origin; nil: the system's store.
    public var ca: String?
    public var account: String
    /// nil: the account's default kind.
    public var kind: TokenKind?
    public var audience: String?
    /// nil: the account's own scopes.
    public var scopes: [String]?

    public init(url: String, scheme: String, host: String, port: Int, account: String) {
        self.url = url
        self.scheme = scheme
        self.host = host
        self.port = port
        self.account = account
    }
}

/// Where a consumer's proxy listens: a loopback TCP address (never a wider one: whoever reaches
/// it spends the consumer's tokens) or a Unix socket path.
public enum ProxyAddress: Sendable, Equatable {
    case tcp(host: String, port: Int)
    case unix(path: String)
}
