#if canImport(Glibc)
import Glibc
#endif

/// Reads the small secret files of the `[fleet]` table (the sealing key, the etcd password):
/// refused when other users may read or write them, as ssh refuses an open private key.
enum FleetSecretFile {
    /// A base64 key, a password or a PEM private key is a few KiB at most; a larger file is not the right one.
    static let maximumSize = 16 * 1024

    /// The file's bytes with surrounding whitespace (a trailing newline) removed.
    static func read(_ path: String, what: String, environment: [String: String]) throws(FleetError) -> [UInt8] {
        var path = path
        if path.hasPrefix("credential:") {
            // A systemd credential (LoadCredential=): systemd made the file, readable by us only.
            guard let directory = environment["CREDENTIALS_DIRECTORY"], !directory.isEmpty else {
                throw FleetError(.badFile, "\(what) names a systemd credential, but CREDENTIALS_DIRECTORY is not set: add LoadCredential= to the unit, or give a file's path")
            }
            path = directory + "/" + path.dropFirst("credential:".count)
        }
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY)
        guard fd >= 0 else { throw FleetError(.badFile, "\(what) \(path) cannot be read: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            throw FleetError(.badFile, "\(what) \(path) is not a regular file")
        }
        guard info.st_mode & (S_IROTH | S_IWOTH | S_IWGRP) == 0 else {
            throw FleetError(.badFile, "\(what) \(path) is readable or writable by other users; refusing it. Fix: chmod 600 \(path)")
        }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: maximumSize + 1)
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else { throw FleetError(.badFile, "\(what) \(path) cannot be read: \(String(cString: strerror(errno)))") }
            if count == 0 { break }
            bytes += buffer[0..<count]
            guard bytes.count <= maximumSize else { throw FleetError(.badFile, "\(what) \(path) is larger than \(maximumSize) bytes; is it the right file?") }
        }
        let blank: Set<UInt8> = [0x20, 0x09, 0x0A, 0x0D]
        while let last = bytes.last, blank.contains(last) { bytes.removeLast() }
        while let first = bytes.first, blank.contains(first) { bytes.removeFirst() }
        return bytes
    }
}
