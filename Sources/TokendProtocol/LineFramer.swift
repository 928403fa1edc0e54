/// Splits a byte stream into JSON Lines, refusing any line longer than the cap.
///
/// Fed bytes as they arrive; hands out complete lines without their terminator (a trailing CR is
/// dropped too, for `socat` users on CRLF terminals). Memory is bounded by the cap: once a line
/// grows past it the framer fails for good, because the rest of the stream can no longer be
/// split reliably.
public struct LineFramer: Sendable {
    /// 64 KiB: docs/protocol.md. Large enough for a 16 KiB token set in an `import` with room to
    /// spare; small enough that a hostile client cannot make the daemon hold much.
    public static let maximumLineLength = 64 * 1024

    public enum Failure: Error, Equatable, Sendable { case lineTooLong }

    private var buffer: [UInt8] = []
    /// Where the next line starts: lines are handed out by moving this, not by removing bytes
    /// from the front of the buffer (which copied the rest for every line: quadratic).
    private var start = 0
    private var scanned = 0
    private var failed = false
    public let maximumLineLength: Int
    /// Whether empty lines are handed out (as `[]`) rather than skipped: the daemon counts each
    /// one against its connection, so a flood of newlines meets back-pressure like any request.
    public let keepsEmptyLines: Bool

    public init(maximumLineLength: Int = LineFramer.maximumLineLength, keepsEmptyLines: Bool = false) {
        self.maximumLineLength = maximumLineLength
        self.keepsEmptyLines = keepsEmptyLines
    }

    public mutating func append<Bytes: Sequence>(_ bytes: Bytes) where Bytes.Element == UInt8 {
        // Drop consumed lines once they are at least half the buffer: each byte is moved at most
        // once per halving, so framing stays linear in the bytes received.
        if start > 0, start * 2 >= buffer.count {
            buffer.removeSubrange(..<start)
            scanned -= start
            start = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// The next complete line, nil when more bytes are needed. Empty lines are skipped unless
    /// `keepsEmptyLines`.
    public mutating func nextLine() throws(Failure) -> [UInt8]? {
        while true {
            if failed { throw .lineTooLong }
            guard let newline = buffer[scanned...].firstIndex(of: UInt8(ascii: "\n")) else {
                scanned = buffer.count
                // A line at the cap may still get the `\r` that its `\n` will drop: wherever the
                // stream is cut, the same line passes or fails (found by the fuzzer).
                let grace = buffer.last == UInt8(ascii: "\r") ? 1 : 0
                if buffer.count - start > maximumLineLength + grace {
                    fail()
                    throw .lineTooLong
                }
                return nil
            }
            var end = newline
            if end > start, buffer[end - 1] == UInt8(ascii: "\r") { end -= 1 }
            let lineStart = start
            start = newline + 1
            scanned = start
            if end - lineStart > maximumLineLength {
                fail()
                throw .lineTooLong
            }
            if end > lineStart || keepsEmptyLines { return Array(buffer[lineStart..<end]) }
        }
    }

    private mutating func fail() {
        failed = true
        buffer = []
        start = 0
        scanned = 0
    }

    /// Bytes held for a line not yet complete.
    public var pendingByteCount: Int { buffer.count - start }

    /// The bytes not yet handed out as lines, as they came: what the daemon's accept loop passes
    /// on with a connection it hands over (`AcceptLoop`).
    public var pendingBytes: ArraySlice<UInt8> { failed ? [] : buffer[start...] }
}
