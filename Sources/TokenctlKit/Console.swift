#if canImport(Glibc)
import Glibc
#endif

/// Where a command's input and output go: the real terminal in the executable, buffers in tests.
protocol Console: AnyObject {
    /// Writes to stdout at once (no buffering), so `watch` lines reach a pipe as they happen.
    func write(_ text: String) throws(TokenctlError)
    /// Writes to stderr, best effort: there is nowhere left to report a failure of stderr.
    func writeError(_ text: String)
    var outputIsTerminal: Bool { get }
    /// The terminal's width when stdout is a terminal.
    var outputColumns: Int? { get }
    var inputIsTerminal: Bool { get }
    /// All of stdin, or the first `limit + 1` bytes when there is more (so callers see "too long").
    func readInput(limit: Int) throws(TokenctlError) -> [UInt8]
    /// Prompts on stderr and reads one line from the terminal on stdin with echo off.
    func readSecretLine(prompt: String, limit: Int) throws(TokenctlError) -> [UInt8]
}

/// The process's own stdin, stdout and stderr, through plain file-descriptor calls.
final class SystemConsole: Console {
    init() {}

    func write(_ text: String) throws(TokenctlError) {
        var bytes = Array(text.utf8)
        try Self.writeAll(STDOUT_FILENO, &bytes)
    }

    func writeError(_ text: String) {
        var bytes = Array(text.utf8)
        try? Self.writeAll(STDERR_FILENO, &bytes)
    }

    var outputIsTerminal: Bool { isatty(STDOUT_FILENO) == 1 }
    var inputIsTerminal: Bool { isatty(STDIN_FILENO) == 1 }

    var outputColumns: Int? {
        guard outputIsTerminal else { return nil }
        var size = winsize()
        guard ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 else { return nil }  // conversion: a C constant
        return Int(size.ws_col)  // conversion: widening UInt16
    }

    func readInput(limit: Int) throws(TokenctlError) -> [UInt8] {
        var input: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while input.count <= limit {
            let count = chunk.withUnsafeMutableBytes { read(STDIN_FILENO, $0.baseAddress, $0.count) }
            if count > 0 {
                input.append(contentsOf: chunk[0..<count])
            } else if count == 0 {
                break
            } else if errno != EINTR {
                throw TokenctlError(.failure, "cannot read stdin (\(Self.errnoText()))", next: "pipe the token into tokenctl's stdin")
            }
        }
        return input
    }

    func readSecretLine(prompt: String, limit: Int) throws(TokenctlError) -> [UInt8] {
        writeError(prompt)
        let echoDisabled = EchoGuard.disable()
        defer {
            if echoDisabled { EchoGuard.restore() }
            // The user's Enter was not echoed: end the prompt line ourselves.
            writeError("\n")
        }
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while line.count <= limit {
            let count = read(STDIN_FILENO, &byte, 1)
            if count == 1 {
                if byte == UInt8(ascii: "\n") { break }
                line.append(byte)
            } else if count == 0 {
                break
            } else if errno != EINTR {
                throw TokenctlError(.failure, "cannot read the terminal (\(Self.errnoText()))", next: "pipe the token into tokenctl's stdin")
            }
        }
        return line
    }

    private static func writeAll(_ fd: Int32, _ bytes: inout [UInt8]) throws(TokenctlError) {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if written >= 0 {
                offset += written
            } else if errno == EINTR {
                continue
            } else if errno == EPIPE {
                throw TokenctlError(.outputClosed, "stdout was closed", next: "keep the reading end of the pipe open")
            } else {
                throw TokenctlError(.failure, "cannot write to stdout (\(errnoText()))", next: "check where stdout goes")
            }
        }
    }

    static func errnoText() -> String { String(cString: strerror(errno)) }
}

/// Turns terminal echo off for a secret prompt, and back on even when Ctrl-C ends the prompt:
/// a shell left without echo is what users remember of a tool.
enum EchoGuard {
    // Read only by the SIGINT handler, written before it is installed: a handler cannot take
    // a lock, and this is written once per process.
    nonisolated(unsafe) private static var saved = termios()

    /// False when echo could not be turned off (stdin is no terminal): nothing to restore then.
    static func disable() -> Bool {
        guard tcgetattr(STDIN_FILENO, &saved) == 0 else { return false }
        var silent = saved
        silent.c_lflag &= ~tcflag_t(ECHO)
        signal(SIGINT) { _ in
            tcsetattr(STDIN_FILENO, TCSANOW, &EchoGuard.saved)
            // Die of SIGINT as the shell expects, with the terminal restored.
            signal(SIGINT, SIG_DFL)
            raise(SIGINT)
        }
        guard tcsetattr(STDIN_FILENO, TCSAFLUSH, &silent) == 0 else {
            signal(SIGINT, SIG_DFL)
            return false
        }
        return true
    }

    static func restore() {
        tcsetattr(STDIN_FILENO, TCSANOW, &saved)
        signal(SIGINT, SIG_DFL)
    }
}
