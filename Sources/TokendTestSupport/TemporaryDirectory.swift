import Foundation

/// A private scratch directory for one test: mode 0700 from the moment it exists, because the
/// code under test creates sockets and keyring files whose safety depends on their directory.
public struct TemporaryDirectory: Sendable {
    public let path: String
    public var url: URL { URL(fileURLWithPath: path, isDirectory: true) }

    /// Creates `BASE/PREFIX-XXXXXX` with mkdtemp(3), which makes it 0700 atomically (no window
    /// where another user could open it). BASE is `$TMPDIR` (else /tmp) unless given.
    public init(prefix: String = "tokend-test", in base: String? = nil) throws {
        let base = base ?? ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        var template = Array("\(base)/\(prefix)-XXXXXX".utf8CString)
        let created = template.withUnsafeMutableBufferPointer { buffer in mkdtemp(buffer.baseAddress!) }
        guard created != nil else { throw TemporaryDirectoryError.creationFailed(errno: errno) }
        path = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// A path inside the directory.
    public func appending(_ component: String) -> String {
        (path as NSString).appendingPathComponent(component)
    }

    /// Deletes the directory and everything in it; a directory already gone is not an error.
    public func remove() throws {
        guard FileManager.default.fileExists(atPath: path) else { return }
        try FileManager.default.removeItem(atPath: path)
    }
}

/// Why a temporary directory could not be made.
public enum TemporaryDirectoryError: Error, Equatable {
    case creationFailed(errno: Int32)
}
