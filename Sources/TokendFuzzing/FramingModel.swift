import TokendProtocol

/// The framing rules of docs/protocol.md written the obvious way (split on `\n`, drop one `\r`,
/// skip empty lines, refuse a line over the cap), to check `LineFramer` against: the framer
/// works incrementally on whatever chunks the kernel delivers, and must agree with this however
/// the same bytes are cut.
struct FramingModel: Equatable {
    var lines: [[UInt8]] = []
    /// A line over the cap arrived (terminated or not); nothing after it is framed.
    var tooLong = false

    init(lines: [[UInt8]] = [], tooLong: Bool = false) {
        self.lines = lines
        self.tooLong = tooLong
    }

    /// What a complete stream of `bytes` must frame into.
    init(expecting bytes: [UInt8], cap: Int) {
        var segments = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
        // The text after the last newline is not a line yet; it only matters if it is already
        // too long to ever become one.
        let unterminated = segments.removeLast()
        for segment in segments {
            var line = segment[...]
            if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
            if line.count > cap {
                tooLong = true
                return
            }
            if !line.isEmpty { lines.append(Array(line)) }
        }
        // One byte of grace: a trailing `\r` may still be followed by the `\n` that drops it.
        let grace = unterminated.last == UInt8(ascii: "\r") ? 1 : 0
        tooLong = unterminated.count > cap + grace
    }

    /// What `framer` makes of `bytes` delivered in `chunks` (sizes; the last chunk takes the rest).
    init(framing bytes: [UInt8], with framer: inout LineFramer, chunks: [Int]) {
        var offset = 0
        var sizes = chunks[...]
        while offset < bytes.count, !tooLong {
            let size = min(max(sizes.popFirst() ?? bytes.count, 1), bytes.count - offset)
            framer.append(bytes[offset..<offset + size])
            offset += size
            do {
                while let line = try framer.nextLine() { lines.append(line) }
            } catch {
                tooLong = true
            }
        }
    }
}

/// Deterministic pseudo-random numbers (SplitMix64), seeded from the input, so that one input
/// always replays the same way: same chunking, same keyring mood, same stored session.
struct SplitMix64 {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    /// The seed for an input: FNV-1a over its bytes.
    init(hashing bytes: UnsafeRawBufferPointer) {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }  // conversion: widening UInt8 to UInt64
        state = hash
    }

    mutating func next() -> UInt64 {
        state &+= 0x9e37_79b9_7f4a_7c15
        var z = state
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }

    mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }  // conversion: a remainder below an Int bound fits in Int
}

extension FramingModel {
    /// For a finding's message: the line lengths and whether a line was too long.
    var summary: String { "\(lines.map(\.count)) lines\(tooLong ? " then too long" : "")" }
}
