import AsyncHTTPClient
import NIOCore
import NIOHTTP1
import NIOSSL
import TokendCore

/// Carries one request to its upstream and the answer back: gets the token, connects (TLS with the
/// upstream's CA, or the system's store), streams the body up and the response down. One per
/// daemon, shared by every consumer's proxy; its HTTP client is shut down when the proxies stop.
struct ProxyForwarder: Sendable {
    typealias BodySequence = NIOThrowingAsyncSequenceProducer<ByteBuffer, any Error, NIOAsyncSequenceProducerBackPressureStrategies.HighLowWatermark, BodyDemand>

    struct Body: Sendable {
        var sequence: BodySequence
        var length: ProxyHeaders.BodyLength
    }

    struct Request: Sendable {
        var head: HTTPRequestHead
        var target: ProxyTarget
        var upstream: ProxyUpstream
        var consumer: String
        var peer: ProxyPeer
        var body: Body?
        var expectsContinue: Bool
    }

    let client: HTTPClient
    let tokens: any ProxyTokenSource
    let audit: (any ProxyAccess)?

    /// Forwards `request` and writes the whole answer to `channel`. Returns whether the
    /// connection may carry another request.
    func forward(_ request: Request, channel: any Channel) async -> Bool {
        let upstream = request.upstream
        var record = ProxyAuditRecord(
            consumer: request.consumer, account: upstream.settings.account, upstream: upstream.origin.description, method: request.head.method.rawValue,
            outcome: .refused(.noToken), peer: request.peer, kind: upstream.settings.kind, scope: upstream.scope)
        defer { audit?.record(record) }
        let bearer: String
        switch await tokens.bearer(
            account: upstream.settings.account, kind: upstream.settings.kind, scope: upstream.scope, minValid: ProxyBounds.tokenMinValid, timeout: ProxyBounds.tokenTimeout)
        {
        case .success(let token): bearer = token
        case .failure(let error):
            let refusal = Self.noToken(error, account: upstream.settings.account)
            (record.reason, record.tokenFailure) = (refusal.message, error.code)
            await write(refusal, to: channel)
            return false
        }
        if request.expectsContinue {
            _ = try? await channel.writeAndFlush(HTTPServerResponsePart.head(HTTPResponseHead(version: request.head.version, status: .continue))).get()
        }
        let (headers, replaced) = ProxyHeaders.upstreamRequest(request.head.headers, bearer: bearer)
        record.replacedAuthorization = replaced
        var outgoing = HTTPClientRequest(url: upstream.origin.description + request.target.pathAndQuery)
        outgoing.method = request.head.method
        outgoing.headers = headers
        if let body = request.body {
            switch body.length {
            case .known(let count): outgoing.body = .stream(body.sequence, length: .known(count))
            case .unknown, .none: outgoing.body = .stream(body.sequence, length: .unknown)
            }
        }
        if let pem = upstream.caPEM {
            do {
                var tls = TLSConfiguration.makeClientConfiguration()
                tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(pem))
                outgoing.tlsConfiguration = tls
            } catch {
                let refusal = ProxyRefusal(.badGateway, .upstreamRefused, "the upstream \(upstream.origin)'s ca file holds no certificate tokend can read")
                (record.outcome, record.reason) = (.refused(refusal.code), refusal.message)
                await write(refusal, to: channel)
                return false
            }
        }
        let response: HTTPClientResponse
        do {
            response = try await client.execute(outgoing, deadline: .distantFuture)
        } catch {
            let refusal = ProxyRefusal(.badGateway, .upstreamFailed, "could not reach \(upstream.origin): \(Self.describe(error))")
            (record.outcome, record.reason) = (.refused(refusal.code), refusal.message)
            await write(refusal, to: channel)
            return false
        }
        record.outcome = .forwarded(status: Int(response.status.code))  // conversion: widening UInt to Int
        var responseHeaders = ProxyHeaders.clientResponse(response.headers)
        // Without a length the answer to HEAD would be framed as an empty chunked body the client
        // does not read: the connection closes after it instead.
        let closeAfter = request.head.method == .HEAD && !responseHeaders.contains(name: "content-length")
        if closeAfter || !request.head.isKeepAlive { responseHeaders.replaceOrAdd(name: "connection", value: "close") }
        do {
            try await channel.writeAndFlush(HTTPServerResponsePart.head(HTTPResponseHead(version: request.head.version, status: response.status, headers: responseHeaders))).get()
            // One chunk at a time: the next is read from the upstream only once this one is
            // written to the client, so a slow client slows the download instead of filling memory.
            for try await chunk in response.body {
                try await channel.writeAndFlush(HTTPServerResponsePart.body(.byteBuffer(chunk))).get()
            }
            try await channel.writeAndFlush(HTTPServerResponsePart.end(nil)).get()
        } catch {
            // The answer broke off halfway (either side): closing is the only honest end.
            try? await channel.close()
            return false
        }
        return !closeAfter && request.head.isKeepAlive
    }

    /// Writes a refusal whole.
    func write(_ refusal: ProxyRefusal, to channel: any Channel) async {
        for part in Self.parts(of: refusal) { channel.write(part, promise: nil) }
        _ = try? await channel.writeAndFlush(HTTPServerResponsePart.end(nil)).get()
    }

    /// The head and body of the answer that says `refusal`; the connection closes after it.
    static func parts(of refusal: ProxyRefusal) -> [HTTPServerResponsePart] {
        var buffer = ByteBuffer()
        buffer.writeString(refusal.body)
        var headers = HTTPHeaders([("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", "\(buffer.readableBytes)"), ("Connection", "close")])
        for (name, value) in refusal.headers { headers.add(name: name, value: value) }
        return [.head(HTTPResponseHead(version: .http1_1, status: refusal.status, headers: headers)), .body(.byteBuffer(buffer))]
    }

    /// 503 (with Retry-After) when the account's token is only out of reach for now, 502 when the
    /// account needs the user (a login) or the configuration: said with the daemon's own advice.
    static func noToken(_ error: TokendError, account: String) -> ProxyRefusal {
        let transient: Set<TokendError.Code> = [.unavailable, .keyringLocked, .keyringUnavailable]
        // The next step is the user's, on the main socket: the proxy's client cannot take it.
        let next: String
        switch error.code {
        case .needsLogin: next = "the user signs in with: tokenctl login \(account)"
        case .keyringLocked, .keyringUnavailable: next = "the user unlocks the keyring; try again later"
        case .unavailable: next = "try again later"
        case .configError: next = "the user fixes tokend's configuration: tokenctl status \(account)"
        default: next = "the user sees why with: tokenctl status \(account)"
        }
        let message = "no token for account \(account) (\(error.code.rawValue)): \(error.message); \(next)"
        return transient.contains(error.code)
            ? ProxyRefusal(.serviceUnavailable, .noToken, message, headers: [("Retry-After", "30")])
            : ProxyRefusal(.badGateway, .noToken, message)
    }

    /// An upstream failure in words, without a URL's query (the client's path may carry secrets).
    static func describe(_ error: any Error) -> String {
        let text = String(describing: error)
        return String(text.prefix { $0 != "?" }.prefix(300))
    }
}
