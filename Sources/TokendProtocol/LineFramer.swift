/// Splits a byte stream into JSON Lines, refusing any line longer than the cap.
///
/// Fed bytes as they arrive; hands out complete lines without their terminator (a trailing CR is
/// dropped too, for `socat` users on CRLF terminals). Memory is bounded by the cap: once a line
/// grows past it the framer fails for good, because the rest of the stream can no longer be
/// split reliably.
public struct LineFramer: Sendable {
    /// 64 KiB: DESIGN.md §5. Large enough for a 16 KiB token set in an `import` with room to
    /// spare; small enough that a hostile client cannot make the daemon hold much.
    public static let maximumLineLength = 64 * 1024

    public enum Failure: Error, Equatable, Sendable { case lineTooLong }

    private var buffer: [UInt8] = []
    private var scanned = 0
    private var failed = false
    public let maximumLineLength: Int

    public init(maximumLineLength: Int = LineFramer.maximumLineLength) {
        self.maximumLineLength = maximumLineLength
    }

    public mutating func append<Bytes: Sequence>(_ bytes: Bytes) where Bytes.Element == UInt8 {
        buffer.append(contentsOf: bytes)
    }

    /// The next complete line, nil when more bytes are needed. Empty lines are skipped.
    public mutating func nextLine() throws(Failure) -> [UInt8]? {
        while true {
            if failed { throw .lineTooLong }
            guard let newline = buffer[scanned...].firstIndex(of: UInt8(ascii: "\n")) else {
                scanned = buffer.count
                // A line at the cap may still get the `\r` that its `\n` will drop: wherever the
                // stream is cut, the same line passes or fails (found by the fuzzer).
                let grace = buffer.last == UInt8(ascii: "\r") ? 1 : 0
                if buffer.count > maximumLineLength + grace {
                    failed = true
                    buffer = []
                    throw .lineTooLong
                }
                return nil
            }
            var line = Array(buffer[..<newline])
            buffer.removeSubrange(...newline)
            scanned = 0
            if line.last == UInt8(ascii: "\r") { line.removeLast() }
            if line.count > maximumLineLength {
                failed = true
                buffer = []
                throw .lineTooLong
            }
            if !line.isEmpty { return line }
        }
    }

    /// Bytes held for a line not yet complete.
    public var pendingByteCount: Int { buffer.count }
}
