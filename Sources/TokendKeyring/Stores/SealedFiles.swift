import Glibc
import TokendCore

/// The `tpm2` store's files: a 0700 directory of 0600 files, each replaced atomically (a
/// temporary file, fsync, rename, fsync of the directory), so a crash at any point leaves either
/// the old file or the new one, whole.
enum SealedFiles {
    /// A session file is a few KiB; anything past 1 MiB is not one of ours.
    static let sizeLimit = 1 << 20

    /// The file's bytes; nil when it does not exist.
    static func read(_ path: String) -> Result<[UInt8]?, KeyringError> {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        if fd < 0 {
            if errno == ENOENT { return .success(nil) }
            return .failure(fileError("cannot open \(path)"))
        }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16384)
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                return .failure(fileError("cannot read \(path)"))
            }
            if count == 0 { return .success(bytes) }
            bytes.append(contentsOf: buffer[0..<count])
            if bytes.count > sizeLimit { return .failure(KeyringError(.corrupt, "\(path) is larger than any file tokend writes")) }
        }
    }

    static func write(_ bytes: [UInt8], to path: String, directory: String) -> Result<Void, KeyringError> {
        if let problem = makeDirectory(directory) { return .failure(problem) }
        let temporary = path + ".tmp"
        unlink(temporary)  // left by a crash mid-write: never the newest, the rename did not happen
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { return .failure(fileError("cannot create \(temporary)")) }
        var written = 0
        while written < bytes.count {
            let count = bytes[written...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else {
                let error = fileError("cannot write \(temporary)")
                close(fd)
                unlink(temporary)
                return .failure(error)
            }
            written += count
        }
        guard fsync(fd) == 0 else {
            let error = fileError("cannot fsync \(temporary)")
            close(fd)
            unlink(temporary)
            return .failure(error)
        }
        close(fd)
        guard rename(temporary, path) == 0 else {
            let error = fileError("cannot rename \(temporary)")
            unlink(temporary)
            return .failure(error)
        }
        return syncDirectory(directory)
    }

    static func remove(_ path: String, directory: String) -> Result<Bool, KeyringError> {
        if unlink(path) != 0 {
            if errno == ENOENT { return .success(false) }
            return .failure(fileError("cannot remove \(path)"))
        }
        return syncDirectory(directory).map { true }
    }

    static func names(in directory: String) -> [String] {
        guard let dir = opendir(directory) else { return [] }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            names.append(withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) })
        }
        return names
    }

    /// The directory and its missing parents; the last one 0700 (the parents: as mkdir -p would).
    static func makeDirectory(_ directory: String) -> KeyringError? {
        var path = ""
        let parts = directory.split(separator: "/")
        for (index, part) in parts.enumerated() {
            path += "/" + part
            let mode: mode_t = index >= parts.count - 2 ? 0o700 : 0o755
            if mkdir(path, mode) != 0, errno != EEXIST { return fileError("cannot create \(path)") }
        }
        return nil
    }

    static func syncDirectory(_ directory: String) -> Result<Void, KeyringError> {
        let fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return .failure(fileError("cannot open \(directory)")) }
        defer { close(fd) }
        return fsync(fd) == 0 ? .success(()) : .failure(fileError("cannot fsync \(directory)"))
    }

    static func fileError(_ what: String) -> KeyringError {
        let reason = String(cString: strerror(errno))
        return KeyringError(.unavailable, "\(what): \(reason)", steps: "check the folder's owner and free space; under systemd, add the tpm2 drop-in (StateDirectory=tokend) from README, \"A headless server\"")
    }
}
