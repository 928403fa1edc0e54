import Foundation
import Synchronization
import TokendProtocol
import Testing

import TokendCore
@testable import TokenctlKit

#if canImport(Glibc)
import Glibc
#endif

/// A console made of strings: what a command printed, and what stdin held.
final class CapturingConsole: Console {
    var stdout = ""
    var stderr = ""
    var input: [UInt8]
    var inputIsTerminal = false
    var outputIsTerminal = false
    var outputColumns: Int? = nil
    private(set) var prompts: [String] = []

    init(input: String = "") { self.input = Array(input.utf8) }

    func write(_ text: String) throws(TokenctlError) { stdout += text }
    func writeError(_ text: String) { stderr += text }
    func readInput(limit: Int) throws(TokenctlError) -> [UInt8] { Array(input.prefix(limit + 1)) }
    func readSecretLine(prompt: String, limit: Int) throws(TokenctlError) -> [UInt8] {
        prompts.append(prompt)
        return Array(input.prefix { $0 != UInt8(ascii: "\n") }.prefix(limit + 1))
    }
}

/// Runs tokenctl in-process the way main.swift does.
func runTokenctl(_ arguments: [String], console: CapturingConsole = CapturingConsole(), environment: Environment = [:]) -> Int32 {
    Tokenctl.run(arguments, environment: environment, console: console)
}

/// A stand-in for tokend: a Unix socket in a temp dir whose accept loop runs on its own thread.
/// Each connection gets the reply lines `script` chooses for the first request line, then is
/// closed — which is also how a watch stream ends.
final class FakeDaemon: Sendable {
    let directory: String
    let path: String
    private let listener: Int32
    private let recorder = Recorder()

    private final class Recorder: Sendable {
        let lines = Mutex<[String]>([])
    }

    /// Every request line received so far. A client has read its reply before this is checked,
    /// and the line is recorded before the reply is written, so no waiting is needed.
    var received: [String] { recorder.lines.withLock { $0 } }

    init(script: @escaping @Sendable (String) -> [String]) throws {
        // Short, private paths: sun_path holds 107 bytes.
        var template = Array("/tmp/tokenctl-test-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw POSIXError(.EIO) }
        directory = String(cString: made)
        path = directory + "/tokend.sock"
        let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        self.listener = listener
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            let bytes = Array(path.utf8)
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0, listen(listener, 16) == 0 else { throw POSIXError(.EADDRINUSE) }
        let recorder = recorder
        Thread.detachNewThread {
            while true {
                let connection = accept(listener, nil, nil)
                guard connection >= 0 else {
                    if errno == EINTR { continue }
                    // stop() shut the listener down. Closed here, not there, so that its number
                    // cannot be reused by another test's socket while this loop still uses it.
                    close(listener)
                    return
                }
                let line = Self.readLine(connection)
                recorder.lines.withLock { $0.append(line) }
                for reply in script(line) {
                    let bytes = Array((reply + "\n").utf8)
                    _ = bytes.withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                }
                close(connection)
            }
        }
    }

    /// Replies with the same lines to every request.
    convenience init(replies: [String]) throws {
        try self.init(script: { _ in replies })
    }

    /// Ends the accept loop and removes the socket. Call it in a `defer`, which also keeps the
    /// daemon alive until the test is done with it.
    func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
        unlink(path)
        rmdir(directory)
    }

    /// The received request lines, decoded.
    var requestObjects: [[String: Any]] {
        received.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    private static func readLine(_ fd: Int32) -> String {
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while read(fd, &byte, 1) == 1, byte != UInt8(ascii: "\n") { line.append(byte) }
        return String(decoding: line, as: UTF8.self)
    }
}

/// A socket path nothing listens on: in a directory made unique by mkdtemp, then removed.
func pathWithoutDaemon() -> String {
    var template = Array("/tmp/tokenctl-test-XXXXXX".utf8CString)
    let directory = String(cString: mkdtemp(&template)!)
    rmdir(directory)
    return directory + "/tokend.sock"
}
