import AsyncHTTPClient
import FoundationEssentials
import NIOCore
import NIOSSL
import Synchronization
import TokendCore

/// etcd v3 through its JSON gateway over HTTPS with mutual TLS: one request, one answer, each
/// bounded by `callDeadline`, tried on each endpoint in turn from the last one that answered.
///
/// Why the gateway and not gRPC: it needs nothing but the HTTP client tokend already ships, where
/// gRPC would add generated etcd protobuf code and HTTP/2's client to the daemon. Why a user name
/// and password besides the certificate: etcd 3.4's gateway passes requests to etcd's gRPC server
/// on its own connection, so the client certificate's CN never reaches the auth store (etcd PR
/// #10366 turned CN auth off for the gateway; #10392 refuses such certificates there).
public final class EtcdClient: Sendable {
    /// One request to one member: etcd answers in milliseconds on a LAN; 2 s is a member that is
    /// stopped or cut off, and leaves time to try the others well inside a 10 s lease.
    public static let callDeadline: Double = 2
    /// Answers tokend reads are a few KiB per account; 8 MiB holds a range of thousands.
    static let maximumAnswer = 8 * 1024 * 1024

    struct Credentials: Sendable {
        var name: String
        var password: String
    }

    let endpoints: [String]
    let http: HTTPClient
    let credentials: Credentials?
    let clock: any WallClock
    let timers: any TimerSource
    /// etcd's simple token from `/v3/auth/authenticate`; renewed when etcd says it is invalid.
    let token = Mutex<String?>(nil)
    /// The endpoint that answered last: tried first next time.
    let preferred = Mutex(0)

    public init(settings: FleetSettings, environment: [String: String], clock: any WallClock, timers: any TimerSource) throws(FleetError) {
        endpoints = settings.endpoints.map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 }
        self.clock = clock
        self.timers = timers
        var tls = TLSConfiguration.makeClientConfiguration()
        do {
            tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(settings.ca))
            tls.certificateChain = try NIOSSLCertificate.fromPEMFile(settings.cert).map { .certificate($0) }
        } catch {
            throw FleetError(.badFile, "ca \(settings.ca) or cert \(settings.cert) is not a PEM certificate file tokend can read")
        }
        let keyBytes = try FleetSecretFile.read(settings.key, what: "key", environment: environment)
        do {
            tls.privateKey = .privateKey(try NIOSSLPrivateKey(bytes: keyBytes, format: .pem))
        } catch {
            throw FleetError(.badFile, "key \(settings.key) is not a PEM private key (an encrypted key cannot be used unattended)")
        }
        if let user = settings.user, let passwordFile = settings.passwordFile {
            let password = try FleetSecretFile.read(passwordFile, what: "password_file", environment: environment)
            credentials = Credentials(name: user, password: String(decoding: password, as: UTF8.self))
        } else {
            credentials = nil
        }
        var configuration = HTTPClient.Configuration()
        configuration.tlsConfiguration = tls
        // Nothing at etcd redirects; a redirect would carry the auth token elsewhere.
        configuration.redirectConfiguration = .disallow
        configuration.timeout = .init(connect: .milliseconds(Int64(saturating: Self.callDeadline * 1000)))
        // HTTP/1.1: over HTTP/2 etcd 3.4's gateway ended a watch's stream after its first
        // message (measured: `created`, then the end); over HTTP/1.1 it streams as it should.
        configuration.httpVersion = .http1Only
        http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    /// AsyncHTTPClient traps if its client is dropped unshut.
    public func shutdown() async {
        try? await http.shutdown()
    }

    // MARK: - Calls

    func range(_ key: [UInt8], end: [UInt8]? = nil) async throws(FleetError) -> EtcdRangeAnswer {
        try await call("/v3/kv/range", EtcdRangeRequest(key: key.base64, range_end: end?.base64))
    }

    func txn(_ request: EtcdTxnRequest) async throws(FleetError) -> EtcdTxnAnswer {
        try await call("/v3/kv/txn", request)
    }

    func grantLease(seconds: Double) async throws(FleetError) -> EtcdLeaseAnswer {
        try await call("/v3/lease/grant", EtcdLeaseRequest(TTL: EtcdNumber(Int64(saturating: seconds.rounded(.up))), ID: nil))
    }

    /// One keep-alive: the gateway answers the first message of the stream, then ends it.
    func keepAlive(_ id: Int64) async throws(FleetError) -> EtcdLeaseAnswer {
        let answer: EtcdKeepAliveAnswer = try await call("/v3/lease/keepalive", EtcdLeaseRequest(TTL: nil, ID: EtcdNumber(id)))
        return answer.result ?? EtcdLeaseAnswer()
    }

    func revokeLease(_ id: Int64) async throws(FleetError) {
        let _: EtcdLeaseAnswer = try await call("/v3/lease/revoke", EtcdLeaseRequest(TTL: nil, ID: EtcdNumber(id)))
    }

    /// `path` on the preferred endpoint, then on each other in turn while they are unreachable.
    func call<Answer: Decodable & Sendable>(_ path: String, _ body: some Encodable) async throws(FleetError) -> Answer {
        let bytes: [UInt8]
        do {
            bytes = Array(try JSONEncoder().encode(body))
        } catch {
            throw FleetError(.refused, "the request to etcd could not be encoded")
        }
        let first = preferred.withLock { $0 }
        var last = FleetError(.unreachable, "no etcd endpoint is configured")
        for offset in 0..<endpoints.count {
            let index = (first + offset) % endpoints.count
            do throws(FleetError) {
                let answer: Answer = try await authenticated(endpoints[index], path, bytes)
                preferred.withLock { $0 = index }
                return answer
            } catch {
                guard error.code == .unreachable else { throw error }
                last = error
            }
        }
        throw last
    }

    /// One call to one endpoint, authenticating first (and once more when etcd says the token
    /// expired: simple tokens live 5 minutes by default).
    func authenticated<Answer: Decodable & Sendable>(_ endpoint: String, _ path: String, _ body: [UInt8]) async throws(FleetError) -> Answer {
        for attempt in 0..<2 {
            let current = try await authToken(endpoint, renew: attempt > 0)
            do throws(FleetError) {
                return try await exchange(endpoint, path, body, token: current)
            } catch {
                guard Self.isExpiredToken(error), attempt == 0 else { throw error }
            }
        }
        throw FleetError(.refused, "etcd refused this member's auth token twice")
    }

    /// etcd's words for an expired or revoked simple token ("invalid auth token").
    static func isExpiredToken(_ error: FleetError) -> Bool {
        error.code == .refused && error.message.contains("auth token")
    }

    /// The auth token for `endpoint`'s cluster (nil without credentials), asked for when there is
    /// none yet or `renew`.
    func authToken(_ endpoint: String, renew: Bool) async throws(FleetError) -> String? {
        guard let credentials else { return nil }
        if !renew, let held = token.withLock({ $0 }) { return held }
        let request = EtcdAuthRequest(name: credentials.name, password: credentials.password)
        let bytes = (try? JSONEncoder().encode(request)).map { Array($0) } ?? []
        let answer: EtcdAuthAnswer = try await exchange(endpoint, "/v3/auth/authenticate", bytes, token: nil)
        guard let fresh = answer.token else { throw FleetError(.refused, "etcd gave no auth token to user \(credentials.name)") }
        token.withLock { $0 = fresh }
        return fresh
    }

    /// POSTs `body` to `endpoint + path` within `callDeadline`, head and body together.
    func exchange<Answer: Decodable & Sendable>(_ endpoint: String, _ path: String, _ body: [UInt8], token: String?) async throws(FleetError) -> Answer {
        var request = HTTPClientRequest(url: endpoint + path)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        // etcd's gateway takes the token bare, not as a bearer token.
        if let token { request.headers.add(name: "Authorization", value: token) }
        request.body = .bytes(ByteBuffer(bytes: body))
        let prepared = request
        let http = http
        let unreachable = FleetError(.unreachable, "etcd at \(endpoint) did not answer within \(Int(saturating: Self.callDeadline)) s")
        let result: (status: UInt, body: [UInt8])?
        do {
            result = try await FleetDeadline.race(Self.callDeadline, clock: clock, timers: timers) {
                let response = try await http.execute(prepared, deadline: .now() + .milliseconds(Int64(saturating: Self.callDeadline * 1000)))
                let bytes = try await response.body.collect(upTo: Self.maximumAnswer)
                return (status: response.status.code, body: Array(buffer: bytes))
            }
        } catch {
            throw FleetError(.unreachable, "etcd at \(endpoint) cannot be reached: \(Self.describe(error))")
        }
        guard let result else { throw unreachable }
        guard result.status == 200 else { throw Self.failure(status: result.status, body: result.body, endpoint: endpoint) }
        do {
            return try JSONDecoder().decode(Answer.self, from: Data(result.body))
        } catch {
            throw FleetError(.refused, "etcd at \(endpoint) answered \(path) with something that is not its JSON")
        }
    }

    /// A gateway error as a fleet error: gRPC's Unavailable (14) and DeadlineExceeded (4) are a
    /// member without quorum or leader, the rest a refusal.
    static func failure(status: UInt, body: [UInt8], endpoint: String) -> FleetError {
        let answer = try? JSONDecoder().decode(EtcdErrorAnswer.self, from: Data(body))
        let message = String((answer?.message ?? answer?.error ?? "HTTP \(status)").prefix(200))
        switch answer?.code {
        case 4?, 14?: return FleetError(.unreachable, "etcd at \(endpoint): \(message)")
        default: return FleetError(.refused, "etcd at \(endpoint) refused: \(message)")
        }
    }

    /// An error's text, shortened: NIO's descriptions can be long; none carries a secret.
    static func describe(_ error: any Error) -> String {
        String(String(describing: error).prefix(160))
    }
}
