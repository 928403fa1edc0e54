import AsyncHTTPClient
import FoundationEssentials
import NIOCore

/// One line of `/v3/watch`'s stream: an answer, or the error that ended the stream.
struct EtcdWatchLine: Decodable, Sendable {
    var result: EtcdWatchResult?
    var error: EtcdErrorAnswer?
}

extension EtcdClient {
    /// Watches on the preferred endpoint, handing each answer to `body`, until the stream ends
    /// or fails, or `seconds` pass: the caller starts a new watch after the last revision seen,
    /// so a member that stopped answering (SIGSTOP, a cut cable) holds no watch for long.
    func watch(_ request: EtcdWatchRequest, for seconds: Double, _ body: @escaping @Sendable (EtcdWatchResult) async -> Void) async throws(FleetError) {
        let endpoint = endpoints[preferred.withLock { $0 } % max(1, endpoints.count)]
        let token = try await authToken(endpoint, renew: false)
        let bytes: [UInt8]
        do {
            bytes = Array(try JSONEncoder().encode(request))
        } catch {
            throw FleetError(.refused, "the watch request could not be encoded")
        }
        var outgoing = HTTPClientRequest(url: endpoint + "/v3/watch")
        outgoing.method = .POST
        outgoing.headers.add(name: "Content-Type", value: "application/json")
        if let token { outgoing.headers.add(name: "Authorization", value: token) }
        outgoing.body = .bytes(ByteBuffer(bytes: bytes))
        let prepared = outgoing
        let (http, limit) = (http, Self.maximumAnswer)
        let failure: FleetError?
        do {
            failure = try await FleetDeadline.race(seconds, clock: clock, timers: timers) { () async throws -> FleetError? in
                // The race above ends the stream; this deadline only backs it up.
                let response = try await http.execute(prepared, deadline: .now() + .seconds(3600))
                guard response.status == .ok else {
                    let answer = try await response.body.collect(upTo: limit)
                    return Self.failure(status: response.status.code, body: Array(buffer: answer), endpoint: endpoint)
                }
                var pending: [UInt8] = []
                for try await chunk in response.body {
                    pending += chunk.readableBytesView
                    guard pending.count <= limit else { return FleetError(.refused, "etcd's watch stream sent a line over \(limit) bytes") }
                    // grpc-gateway ends each message of a stream with a newline.
                    while let newline = pending.firstIndex(of: 0x0A) {
                        let line = Array(pending[..<newline])
                        pending.removeSubrange(...newline)
                        guard let decoded = try? JSONDecoder().decode(EtcdWatchLine.self, from: Data(line)) else { continue }
                        if let error = decoded.error {
                            let message = String((error.message ?? error.error ?? "the watch failed").prefix(200))
                            return FleetError(error.code == 14 ? .unreachable : .refused, "etcd at \(endpoint): \(message)")
                        }
                        guard let result = decoded.result else { continue }
                        await body(result)
                        // A cancelled watch stays open and silent: end it, and say why.
                        if result.canceled == true {
                            return FleetError(.refused, "etcd at \(endpoint) cancelled the watch: \(String((result.cancel_reason ?? "no reason given").prefix(200)))")
                        }
                    }
                }
                return FleetError(.unreachable, "etcd at \(endpoint) ended the watch")
            } ?? nil
        } catch {
            throw FleetError(.unreachable, "etcd at \(endpoint) cannot be watched: \(Self.describe(error))")
        }
        if let failure {
            if Self.isExpiredToken(failure) { _ = try? await authToken(endpoint, renew: true) }
            throw failure
        }
    }
}
