import Dispatch
import TokendCore
import TokendProtocol
import TokendServer

/// The request parser and dispatcher as one function of bytes, for libFuzzer (Fuzz/) and for the
/// corpus replay in TokendFuzzingTests. An input is what one client sends on one connection;
/// see docs/fuzzing.md for what is checked.
public enum RequestFuzzer {
    /// Every wait a request may ask for is cut to this, so that no input can stall the fuzzer
    /// for the protocol's 30-second default, while waits still happen and time out.
    public static let requestTimeout = 0.02
    /// Far above anything one input needs (a few hundred lines, each bounded by `requestTimeout`):
    /// an input that takes longer has found a hang.
    static let hangLimit = 60.0
    /// A refresh that does not end within this after the input is done is stuck.
    static let settleLimit = 10.0
    /// The second framer's cap ranges over small values, so inputs of a few bytes reach the
    /// framer's edges (a line at the cap, a `\r` at the cap) that 64 KiB lines reach rarely.
    static let probeCaps = 1...64

    public static func run(_ bytes: UnsafeRawBufferPointer) {
        let input = Array(bytes)
        let seed = seed(of: bytes)
        let finished = DispatchSemaphore(value: 0)
        // libFuzzer calls in on a plain thread: block it on the async work, which runs on the
        // global executor.
        Task {
            await session(input, seed: seed)
            finished.signal()
        }
        invariant(finished.wait(timeout: .now() + hangLimit) == .success, "one input ran longer than \(hangLimit) s")
    }

    /// The same for async callers (the corpus replay): no thread is blocked on a semaphore.
    public static func run(_ bytes: [UInt8]) async {
        await session(bytes, seed: bytes.withUnsafeBytes(seed(of:)))
    }

    /// Everything random about an input's run (chunking, keyring, stored session) comes from
    /// its bytes, so a crash replays.
    static func seed(of bytes: UnsafeRawBufferPointer) -> UInt64 {
        var random = SplitMix64(hashing: bytes)
        return random.next()
    }

    static func session(_ input: [UInt8], seed: UInt64) async {
        let world = FuzzWorld.shared
        var random = SplitMix64(seed: seed)
        await world.reset(using: &random)
        let started = ContinuousClock.now

        // The framer, fed as the kernel might deliver the bytes, against the plain rules; once
        // at the daemon's cap, once at a small one.
        let chunks = chunking(input.count, &random)
        var framer = LineFramer()
        let framed = FramingModel(framing: input, with: &framer, chunks: chunks)
        let expected = FramingModel(expecting: input, cap: LineFramer.maximumLineLength)
        invariant(framed == expected, "LineFramer disagrees with the framing rules: \(framed.summary) vs \(expected.summary)")
        let probeCap = probeCaps.lowerBound + random.below(probeCaps.count)
        var probe = LineFramer(maximumLineLength: probeCap)
        let probed = FramingModel(framing: input, with: &probe, chunks: chunks)
        let rules = FramingModel(expecting: input, cap: probeCap)
        invariant(probed == rules, "LineFramer disagrees with the framing rules at cap \(probeCap): \(probed.summary) vs \(rules.summary)")

        // Each line as the connection loop handles it: one reply per line, until a `watch`
        // turns the connection into an event stream (later lines are read and ignored).
        lines: for line in framed.lines {
            let request: RequestFields?
            let reply: RequestRouter.Reply
            switch WireCoding.decodeFields(line) {
            case .failure:
                request = nil
                reply = await world.handler.handle(line: line)
            case .success(var decoded):
                request = decoded
                decoded.set(.timeout, clamped(decoded.number(.timeout)))
                reply = await world.handler.handle(DecodedRequest(decoded))
            }
            switch reply {
            case .response(let response):
                ReplyCheck(line: line, request: request, response: response, secrets: world.ledger.all).verify()
            case .stream(let stream):
                // The first response line of the stream (a watch's acknowledgement, a login's
                // outcome) is checked; the rest is dropped, as when the client goes away.
                for await streamed in stream {
                    guard case .response(let response) = streamed else { continue }
                    ReplyCheck(line: line, request: request, response: response, secrets: world.ledger.all).verify()
                    if request?.string(.op) == "watch" { invariant(response.watching != nil, "a watch reply that names nothing watched") }
                    break
                }
                break lines
            }
        }
        let settled = await world.settle(limit: settleLimit)
        // Never a tight loop against the provider: each request line may cause a refresh or
        // two, and each account at most one a second besides (a proactive one or a retry).
        let elapsed = started.duration(to: .now) / .seconds(1)
        let perSecond = 2 * Double(world.configuration.accounts.count)
        let allowed = 4 + 2 * framed.lines.count + Int(saturating: (elapsed * perSecond).rounded(.up))
        invariant(world.ledger.refreshCount <= allowed, "\(world.ledger.refreshCount) refreshes in \(elapsed) s for \(framed.lines.count) lines")
        invariant(settled, "a refresh still in flight \(settleLimit) s after the input ended")
        // A client that went away leaves no subscription behind.
        invariant(world.hub.subscriberCount == 0, "a watch outlived its connection")
    }

    /// A valid `timeout` cut to `requestTimeout`; an invalid one left alone for the handler to
    /// refuse; none at all is the 30-second default, cut too.
    static func clamped(_ timeout: Double?) -> Double? {
        guard let timeout else { return requestTimeout }
        guard timeout.isFinite, timeout >= 0, timeout <= Command.maximumTimeout else { return timeout }
        return min(timeout, requestTimeout)
    }

    /// Chunk sizes: byte by byte, small, a socket read's worth, or all at once.
    static func chunking(_ count: Int, _ random: inout SplitMix64) -> [Int] {
        switch random.below(4) {
        case 0: return [count]
        case 1: return Array(repeating: 1, count: min(count, 4096))
        case 2: return (0..<min(count, 4096)).map { _ in 1 + random.below(97) }
        default: return (0..<16).map { _ in 1 + random.below(64 * 1024) }
        }
    }
}
