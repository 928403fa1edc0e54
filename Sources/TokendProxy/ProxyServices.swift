import TokendCore

/// Where the proxy gets tokens: the daemon's engine, on the same path as the `token` op (single
/// flight, the min-valid wait, the scoped-token cache).
public protocol ProxyTokenSource: Sendable {
    func bearer(account: String, kind: TokenKind?, scope: TokenScope?, minValid: Double, timeout: Double) async -> Result<String, TokendError>
}

/// The other end of a proxy connection, as the kernel tells it: on a Unix socket SO_PEERCRED's
/// pid and uid; on TCP loopback the socket owner's uid (sock_diag or /proc/net/tcp), no pid.
public struct ProxyPeer: Sendable, Equatable {
    public var pid: Int32?
    public var uid: UInt32?
    /// What the daemon read of the pid at accept (`ProxyAccess.admit`): its executable and cgroup,
    /// for the audit, while the process surely still runs.
    public var executable: String?
    public var cgroup: String?

    public init(pid: Int32? = nil, uid: UInt32? = nil, executable: String? = nil, cgroup: String? = nil) {
        self.pid = pid
        self.uid = uid
        self.executable = executable
        self.cgroup = cgroup
    }
}

/// One proxied request, for the audit: who asked, what for, what came of it. Never the token, the
/// path or the query (they may carry secrets of the client's own).
public struct ProxyAuditRecord: Sendable, Equatable {
    public enum Outcome: Sendable, Equatable {
        /// Forwarded; the upstream's status.
        case forwarded(status: Int)
        case refused(ProxyRefusal.Code)
    }

    public var consumer: String
    /// Nil when no upstream matched.
    public var account: String?
    /// The origin asked for (`http://host[:port]` as the client wrote it), or tokend's upstream.
    public var upstream: String
    public var method: String
    public var outcome: Outcome
    public var peer: ProxyPeer
    /// The client sent its own `Authorization`, which the proxy dropped.
    public var replacedAuthorization: Bool
    public var kind: TokenKind?
    public var scope: TokenScope?
    /// A refusal's sentence (its `ProxyRefusal.message`), or the engine's error when there was no
    /// token: never a secret.
    public var reason: String?
    /// The engine's code when there was no token (`needs_login`, `unavailable`, …).
    public var tokenFailure: TokendError.Code?

    public init(
        consumer: String, account: String?, upstream: String, method: String, outcome: Outcome, peer: ProxyPeer, replacedAuthorization: Bool = false,
        kind: TokenKind? = nil, scope: TokenScope? = nil
    ) {
        self.consumer = consumer
        self.account = account
        self.upstream = upstream
        self.method = method
        self.outcome = outcome
        self.peer = peer
        self.replacedAuthorization = replacedAuthorization
        self.kind = kind
        self.scope = scope
    }
}

/// The daemon's part in who uses a proxy: at accept it completes what is known of a peer of the
/// user (executable, cgroup) and may refuse it (a consumer limited to a systemd unit); it hears
/// each request once it is decided (refused) or answered (forwarded).
public protocol ProxyAccess: Sendable {
    func record(_ record: ProxyAuditRecord)
    /// The peer as the daemon knows it, and nil when it may use `consumer`'s proxy, else the
    /// sentence that says why not.
    func admit(_ peer: ProxyPeer, consumer: String) -> (peer: ProxyPeer, refusal: String?)
}

extension ProxyAccess {
    public func admit(_ peer: ProxyPeer, consumer: String) -> (peer: ProxyPeer, refusal: String?) { (peer, nil) }
}
